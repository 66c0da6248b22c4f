package membership

import (
	"strings"
	"testing"
	"time"
)

// TestStrictReconfigSettleOverride: Scope.StrictReconfigSettle, when set, replaces the 5 s.
func TestStrictReconfigSettleOverride(t *testing.T) {
	t.Parallel()
	pending := with(mem("p", 3), func(m *Member) {
		m.Pending = true
		m.PodRunning, m.PodReady, m.Ready, m.VoterHint = false, false, false, false
	})
	s := Scope{Target: 3, ClusterID: "cid", Now: t0.Add(time.Hour), StrictReconfigSettle: time.Second,
		Members: []Member{mem("a", 1), mem("b", 2), pending},
		Etcd:    healthyEtcd(1, voter(1, "a"), voter(2, "b"))}
	s.Etcd.StartedSeen = map[uint64]time.Time{1: {}, 2: s.Now.Add(-2 * time.Second)}
	if got := Next(s); got.Kind != KindJoin {
		t.Fatalf("b up 2 s of a 1 s settle: Next = %+v, want a join", got)
	}
	s.Etcd.StartedSeen[2] = s.Now.Add(-400 * time.Millisecond)
	got := Next(s)
	if got.Kind != KindWait || got.RequeueAfter != 600*time.Millisecond || !strings.Contains(got.Message, "has been up for 1s") {
		t.Fatalf("b up 0.4 s of a 1 s settle: Next = %+v, want a 0.6 s wait naming 1s", got)
	}
}

// TestRollSettleOverride: Scope.RollSettle, when set, replaces RollSettle in the roll's gate.
func TestRollSettleOverride(t *testing.T) {
	t.Parallel()
	s := rolled(rolling3(), 1)
	s.Members[1].ReadySince = s.Now.Add(-5 * time.Second)
	s.RollSettle = 2 * time.Second
	if got := Next(s); got.Kind != KindAuthorise || got.Member != "c" {
		t.Fatalf("b Ready for 5 s of a 2 s settle: Next = %+v, want c authorised", got)
	}
	s.RollSettle = 8 * time.Second
	got := Next(s)
	if got.Kind != KindWait || got.RequeueAfter != 3*time.Second || !strings.Contains(got.Message, "b has been Ready for 8s") {
		t.Fatalf("b Ready for 5 s of an 8 s settle: Next = %+v, want a 3 s wait naming 8s", got)
	}
}
