package cluster

import (
	"net/netip"
	"strings"
	"testing"
)

func TestNodesGetDistinctAddressesInsideTheClusterRanges(t *testing.T) {
	t.Parallel()
	nodeRange, podRange := netip.MustParsePrefix(NodeCIDR), netip.MustParsePrefix(PodCIDR)
	seen := map[string]bool{ControlPlaneIP: true}
	for i := range 10 {
		n := newNode(i)
		for _, v := range []string{n.Name, n.IP, n.Bridge, n.PodSubnet, n.CNIBridge} {
			if seen[v] {
				t.Errorf("node %d reuses %q", i, v)
			}
			seen[v] = true
		}
		if !nodeRange.Contains(netip.MustParseAddr(n.IP)) {
			t.Errorf("node %d IP %s is outside %s", i, n.IP, NodeCIDR)
		}
		subnet := netip.MustParsePrefix(n.PodSubnet)
		if !podRange.Contains(subnet.Addr()) || !subnet.Contains(netip.MustParseAddr(n.PodGateway)) {
			t.Errorf("node %d Pod subnet %s / gateway %s outside %s", i, n.PodSubnet, n.PodGateway, PodCIDR)
		}
		// Linux limits interface names to 15 bytes, and down finds links by prefix.
		for _, link := range []string{n.Bridge, n.CNIBridge} {
			if len(link) > 15 || !strings.HasPrefix(link, bridgePrefix) {
				t.Errorf("node %d link %q: want at most 15 bytes starting with %q", i, link, bridgePrefix)
			}
		}
	}
}

func TestHasAddressIn(t *testing.T) {
	t.Parallel()
	pods := netip.MustParsePrefix(PodCIDR)
	tests := []struct {
		name string
		out  string
		want bool
	}{
		{"Pod address", "1: lo    inet 127.0.0.1/8 scope host lo\n3: eth0    inet 10.244.1.7/24 brd 10.244.1.255 scope global eth0", true},
		{"loopback only", "1: lo    inet 127.0.0.1/8 scope host lo", false},
		{"another range", "3: eth0    inet 10.245.0.2/24 scope global eth0", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := hasAddressIn(tt.out, pods); got != tt.want {
				t.Errorf("hasAddressIn() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUnescapeMountPath(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		`/a/b`:                 "/a/b",
		`/with\040space`:       "/with space",
		`/tab\011and\134slash`: "/tab\tand\\slash",
		`/trailing\04`:         `/trailing\04`,
	}
	for in, want := range tests {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}
