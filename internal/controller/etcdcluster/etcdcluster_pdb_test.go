package etcdcluster

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// TestPDBVotersExcludeDormant: the PDB is computed from membership.Count, in which a dormant
// member, although still in etcd's member list, protects nothing (behaviour.md §20: paused ⇒
// PDB deleted).
func TestPDBVotersExcludeDormant(t *testing.T) {
	t.Parallel()
	s := membership.Scope{
		Target: 0, ClusterID: "cid",
		Members: []membership.Member{{Name: "a", PeerURL: "http://a:2380", Dormant: true}},
		Etcd:    membership.Etcd{Known: true, Members: voters("a")},
	}
	if c := membership.Count(&s); c.Voters != 0 {
		t.Errorf("voters = %d, want 0 for a paused cluster", c.Voters)
	}
}
