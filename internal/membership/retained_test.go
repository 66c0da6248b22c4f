package membership

import (
	"strings"
	"testing"
)

// TestRetainedDataIsTakenOver: a new cluster that finds PVCs an earlier cluster of its name kept
// latches their cluster ID instead of creating a seed, and then re-adopts them one per pass; PVCs
// of two different clusters hold it back with a message naming both.
func TestRetainedDataIsTakenOver(t *testing.T) {
	t.Parallel()
	kept := func(member, id string) PVC {
		return PVC{Name: "data-" + member, Member: member, MemberUID: "old-" + member, PeerURL: peer(member), Foreign: true, Retained: id}
	}
	fresh := Scope{Target: 3, PVCs: []PVC{kept("a", "c1d"), kept("b", "c1d"), kept("c", "c1d")}}
	a := Next(fresh)
	if a.Kind != KindLatchClusterID || a.ClusterID != "c1d" || !strings.Contains(a.Message, "data-a, data-b, data-c") {
		t.Fatalf("Next = %+v, want the retained cluster ID latched, naming the PVCs", a)
	}

	// Latched: the controller no longer marks them foreign, etcd cannot answer (no Pod runs).
	latched := fresh
	latched.ClusterID = "c1d"
	latched.PVCs = nil
	for _, p := range fresh.PVCs {
		p.Foreign = false
		latched.PVCs = append(latched.PVCs, p)
	}
	if got := Next(latched); got.Kind != KindReadopt || got.Member != "a" || !got.Readopt.Create {
		t.Errorf("after the latch: Next = %+v, want member a re-adopted from its PVC", got)
	}

	mixed := Scope{Target: 3, PVCs: []PVC{kept("a", "c1d"), kept("b", "e2f")}}
	if got := Next(mixed); got.Kind != KindWait || !strings.Contains(got.Message, "cluster ID c1d in data-a") ||
		!strings.Contains(got.Message, "cluster ID e2f in data-b") {
		t.Errorf("two clusters' PVCs: Next = %+v, want a wait naming both", got)
	}
	none := Scope{Target: 3, PVCs: []PVC{{Name: "data-x", Member: "x", MemberUID: "u", Foreign: true}}}
	if got := Next(none); got.Kind != KindCreateSeed {
		t.Errorf("a foreign PVC without a recorded cluster ID: Next = %+v, want a fresh bootstrap", got)
	}
}
