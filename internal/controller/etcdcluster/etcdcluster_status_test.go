package etcdcluster

import (
	"testing"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

func voters(names ...string) []etcdclient.Member {
	out := make([]etcdclient.Member, 0, len(names))
	for i, n := range names {
		out = append(out, etcdclient.Member{ID: uint64(i + 1), Name: n, PeerURLs: []string{"http://" + n + ":2380"}})
	}
	return out
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		sign int
	}{
		{"3.5.21", "3.6.0", -1}, {"3.6.10", "3.6.9", 1}, {"3.6.5", "3.6.5", 0}, {"3.6", "3.6.0", 0},
	}
	for _, c := range cases {
		got := compareVersions(c.a, c.b)
		if (got < 0 && c.sign >= 0) || (got > 0 && c.sign <= 0) || (got == 0 && c.sign != 0) {
			t.Errorf("compareVersions(%s, %s) = %d", c.a, c.b, got)
		}
	}
}

func TestRunningVersion(t *testing.T) {
	t.Parallel()
	p := &pass{}
	s := membership.Scope{Target: 3, Etcd: membership.Etcd{Statuses: map[uint64]etcdclient.Status{
		1: {Version: "3.6.5"}, 2: {Version: "3.5.21"}, 3: {Version: "3.6.16"},
	}}}
	if got := p.runningVersion(&s); got != "3.5.21" {
		t.Errorf("runningVersion = %q, want the lowest", got)
	}
	// Paused: the dormant member's last version.
	p.members = []etcdv1alpha2.EtcdMember{{Spec: etcdv1alpha2.EtcdMemberSpec{Dormant: true}, Status: etcdv1alpha2.EtcdMemberStatus{Version: "3.6.4"}}}
	if got := p.runningVersion(&membership.Scope{Target: 0}); got != "3.6.4" {
		t.Errorf("paused runningVersion = %q", got)
	}
	if got := p.runningVersion(&membership.Scope{Target: 3}); got != "" {
		t.Errorf("runningVersion with no answer = %q, want empty (keep the last)", got)
	}
}
