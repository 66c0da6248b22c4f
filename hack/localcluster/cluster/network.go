package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"
)

// sysctls the cluster changes; down restores the values saved before the first change.
var sysctls = []string{
	// Pods and ClusterIP traffic are routed between bridges by the host.
	"/proc/sys/net/ipv4/ip_forward",
	// kube-proxy's iptables rules must see traffic between Pods on one bridge, or a Pod
	// reaching a Service backed by a Pod on the same node gets replies it cannot match.
	"/proc/sys/net/bridge/bridge-nf-call-iptables",
}

// guardRule drops Pod traffic that would leave through any interface this package did not
// create. It sits in mangle/FORWARD, which runs before the filter table, so no ACCEPT that
// kube-proxy or CNI add in filter/FORWARD can bypass it.
var guardRule = []string{"FORWARD", "-s", PodCIDR, "!", "-o", bridgePrefix + "+",
	"-m", "comment", "--comment", "etcd-operator local cluster: Pod traffic stays on this machine", "-j", "DROP"}

// blackholes keep any address of the cluster's ranges that no bridge holds from being routed
// to the host's default gateway; the bridges' more specific routes still win.
var blackholes = []string{NodeCIDR, PodCIDR}

// setUpNetwork creates the bridges, addresses, routes, sysctls and guard rule. Each step
// checks before it changes, so a second up changes nothing.
func (c *Cluster) setUpNetwork(ctx context.Context) error {
	if err := c.saveSysctls(); err != nil {
		return err
	}
	for _, s := range sysctls {
		if err := os.WriteFile(s, []byte("1"), 0o644); err != nil {
			return fmt.Errorf("setting %s: %w", s, err)
		}
	}
	addrs := map[string]string{controlPlaneBridge: ControlPlaneIP, serviceBridge: ""}
	for _, n := range c.nodes {
		addrs[n.Bridge] = n.IP
	}
	for link, ip := range addrs {
		if err := ensureBridge(ctx, link, ip); err != nil {
			return err
		}
	}
	// Host-originated ClusterIP traffic is DNATed by kube-proxy in OUTPUT, after the route
	// was chosen; this route makes that choice local, with the control-plane source address.
	if _, err := runTool(ctx, "ip", "route", "replace", ServiceCIDR, "dev", serviceBridge, "src", ControlPlaneIP); err != nil {
		return err
	}
	for _, cidr := range blackholes {
		if _, err := runTool(ctx, "ip", "route", "replace", "blackhole", cidr); err != nil {
			return err
		}
	}
	if _, err := runTool(ctx, "iptables", append([]string{"-t", "mangle", "-C"}, guardRule...)...); err != nil {
		if _, err := runTool(ctx, "iptables", append([]string{"-t", "mangle", "-I"}, guardRule...)...); err != nil {
			return fmt.Errorf("adding the guard rule: %w", err)
		}
	}
	return nil
}

func ensureBridge(ctx context.Context, name, ip string) error {
	if _, err := runTool(ctx, "ip", "link", "show", name); err != nil {
		if _, err := runTool(ctx, "ip", "link", "add", name, "type", "bridge"); err != nil {
			return err
		}
	}
	if _, err := runTool(ctx, "ip", "link", "set", name, "up"); err != nil {
		return err
	}
	if ip == "" {
		return nil
	}
	out, err := runTool(ctx, "ip", "-o", "-4", "addr", "show", "dev", name)
	if err != nil {
		return err
	}
	if strings.Contains(out, " "+ip+"/") {
		return nil
	}
	_, err = runTool(ctx, "ip", "addr", "add", ip+"/32", "dev", name)
	return err
}

// saveSysctls records the values before the cluster's first change, once per cluster lifetime.
func (c *Cluster) saveSysctls() error {
	path := c.layout.sysctlsSaved()
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	var b strings.Builder
	for _, s := range sysctls {
		v, err := os.ReadFile(s)
		if err != nil {
			return fmt.Errorf("reading %s (is br_netfilter available?): %w", s, err)
		}
		fmt.Fprintf(&b, "%s=%s\n", s, strings.TrimSpace(string(v)))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func (c *Cluster) restoreSysctls() error {
	path := c.layout.sysctlsSaved()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if err := os.WriteFile(key, []byte(value), 0o644); err != nil {
			return fmt.Errorf("restoring %s: %w", key, err)
		}
	}
	return os.Remove(path)
}

// tearDownNetwork removes the guard rule, every eo- link (routes on them go too), the
// blackhole and service routes, the Pods' network namespaces and restores the sysctls.
func (c *Cluster) tearDownNetwork(ctx context.Context) error {
	var errs []error
	for {
		if _, err := runTool(ctx, "iptables", append([]string{"-t", "mangle", "-D"}, guardRule...)...); err != nil {
			break
		}
	}
	for _, cidr := range blackholes {
		_, _ = runTool(ctx, "ip", "route", "del", "blackhole", cidr)
	}
	netns, err := podNetworkNamespaces(ctx)
	errs = append(errs, err)
	for _, ns := range netns {
		if _, err := runTool(ctx, "ip", "netns", "delete", ns); err != nil {
			errs = append(errs, err)
		}
	}
	links, err := ownedLinks(ctx)
	errs = append(errs, err)
	for _, link := range links {
		if _, err := runTool(ctx, "ip", "link", "delete", link); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.restoreSysctls())
	return errors.Join(errs...)
}

// ownedLinks lists the links whose names carry bridgePrefix.
func ownedLinks(ctx context.Context) ([]string, error) {
	out, err := runTool(ctx, "ip", "-o", "link", "show")
	if err != nil {
		return nil, err
	}
	var links []string
	for _, line := range strings.Split(out, "\n") {
		// "12: eo-cp: <BROADCAST,..." or "13: vethX@if2: ..."
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
		if strings.HasPrefix(name, bridgePrefix) {
			links = append(links, name)
		}
	}
	sort.Strings(links)
	return links, nil
}

// podNetworkNamespaces lists the CNI network namespaces that hold an address of PodCIDR: the
// namespaces containerd made for this cluster's Pods, and no one else's.
func podNetworkNamespaces(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pods := netip.MustParsePrefix(PodCIDR)
	var owned []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "cni-") {
			continue
		}
		out, err := runTool(ctx, "ip", "-n", e.Name(), "-o", "-4", "addr", "show")
		if err != nil {
			// A namespace whose Pod is already gone has no interfaces left to show; an
			// unreadable one is reported by the leftover check, not guessed at here.
			continue
		}
		if hasAddressIn(out, pods) {
			owned = append(owned, e.Name())
		}
	}
	return owned, nil
}

func hasAddressIn(ipAddrOutput string, prefix netip.Prefix) bool {
	for _, f := range strings.Fields(ipAddrOutput) {
		if p, err := netip.ParsePrefix(f); err == nil && prefix.Contains(p.Addr()) {
			return true
		}
	}
	return false
}
