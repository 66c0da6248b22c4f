package membership

import (
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/divergence"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/health"
)

// degradedOf is the Degraded condition's reason and message for s.
func degradedOf(s Scope) (string, string) {
	c := degraded(ConditionInput{Scope: &s, Action: Next(s)})
	return c.Reason, c.Message
}

func TestHashComparisonNamesAndReplaces(t *testing.T) {
	t.Parallel()
	// The comparison named c at revision 40: DataCorrupt with the revision, reported in
	// Degraded, c no longer counts healthy for the gate, and it is replaced.
	s := steady3()
	s.Etcd.Hash = divergence.Result{Outcome: divergence.Diverged, Revision: 40, Named: []uint64{3}}
	s = classify(s)
	m := s.Members[2]
	if m.HealthyReason != health.ReasonDataCorrupt || !strings.Contains(m.HealthyMessage, "its keyspace hash differs from the majority at revision 40") {
		t.Fatalf("c named by hash: %+v, want DataCorrupt naming revision 40", m)
	}
	if s.HealthyVoter(voter(3, "c")) {
		t.Error("c named by hash counts healthy for the quorum gate")
	}
	if got := Next(s); got.Kind != KindRemove || got.Member != "c" || !got.InEtcd || got.RemovalReason != health.ReasonDataCorrupt {
		t.Errorf("c named by hash: Next = %+v, want c removed from etcd as DataCorrupt", got)
	}
	reason, msg := degradedOf(s)
	if reason != ReasonMembersUnhealthy || !strings.Contains(msg, "the keyspace hash of c differs from the majority at revision 40") {
		t.Errorf("Degraded = %s %q, want MembersUnhealthy naming c and revision 40", reason, msg)
	}
	if v := EndpointViews(&s)["c"]; v.HashDiffersAt != 40 {
		t.Errorf("EndpointViews[c] = %+v, want HashDiffersAt 40 for the member controller", v)
	}
	// The leader named: leadership moves away first.
	s = steady3()
	s.Etcd.Hash = divergence.Result{Outcome: divergence.Diverged, Revision: 40, Named: []uint64{1}}
	if got := Next(classify(s)); got.Kind != KindMoveLeader || got.Member != "a" {
		t.Errorf("leader named by hash: Next = %+v, want leadership moved off a", got)
	}
	// Once c is gone from etcd, the stale result names nobody in Degraded.
	s = steady3()
	s.Members, s.PVCs = s.Members[:2], s.PVCs[:2]
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"))
	s.Etcd.Hash = divergence.Result{Outcome: divergence.Diverged, Revision: 40, Named: []uint64{3}}
	s.Target = 2
	if reason, msg := degradedOf(classify(s)); reason != ReasonQuorumHealthy {
		t.Errorf("c gone: Degraded = %s %q, want QuorumHealthy", reason, msg)
	}
}

func TestHashComparisonUndecidedReplacesNobody(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Members, s.PVCs = s.Members[:2], s.PVCs[:2]
	s.Target = 2
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"))
	s.Etcd.Hash = divergence.Result{Outcome: divergence.Undecided, Revision: 40, Differing: []uint64{1, 2}}
	s = classify(s)
	if s.Members[0].Unhealthy || s.Members[1].Unhealthy {
		t.Fatalf("two members differ: %+v, want neither marked", s.Members)
	}
	if got := Next(s); got.Mutates() {
		t.Errorf("two members differ: Next = %+v, want nothing done", got)
	}
	reason, msg := degradedOf(s)
	if reason != ReasonHashMismatch || !strings.Contains(msg, "a, b differ at revision 40") || !strings.Contains(msg, "cannot tell which") {
		t.Errorf("Degraded = %s %q, want HashMismatch naming a and b", reason, msg)
	}
}

func TestUnattributedCorruptAlarm(t *testing.T) {
	t.Parallel()
	alarm0 := []etcdclient.Alarm{{MemberID: 0, Type: etcdclient.AlarmCorrupt}}
	// Raised with member ID 0 and not compared yet: kept (it protects the data of a member
	// nobody named yet), nobody replaced.
	s := steady3()
	s.Etcd.Alarms = alarm0
	if got := Next(classify(s)); got.Mutates() {
		t.Errorf("alarm 0, no comparison: Next = %+v, want nothing", got)
	}
	// A Consistent comparison made before the alarm does not clear it.
	s.Etcd.Hash = divergence.Result{Outcome: divergence.Consistent, Revision: 40}
	if got := Next(classify(s)); got.Kind == KindDisarmCorrupt {
		t.Errorf("alarm 0, comparison from before it: Next = %+v, want the alarm kept", got)
	}
	// A comparison under the alarm names c: c is replaced, the alarm stays.
	s.Etcd.Hash = divergence.Result{Outcome: divergence.Diverged, Revision: 40, Named: []uint64{3}, UnderAlarm: true}
	if got := Next(classify(s)); got.Kind != KindRemove || got.Member != "c" {
		t.Errorf("alarm 0, c named: Next = %+v, want c removed", got)
	}
	// c gone, the comparison under the alarm finds the rest equal: the alarm is disarmed.
	s = steady3()
	s.Members, s.PVCs = s.Members[:2], s.PVCs[:2]
	s.Target = 2
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"))
	s.Etcd.Alarms = alarm0
	s.Etcd.Hash = divergence.Result{Outcome: divergence.Consistent, Revision: 41, UnderAlarm: true}
	got := Next(classify(s))
	if got.Kind != KindDisarmCorrupt || got.MemberID != 0 || !strings.Contains(got.Message, "member ID 0") {
		t.Errorf("alarm 0, all equal under it: Next = %+v, want it disarmed", got)
	}
	// Under a CORRUPT alarm etcd's readiness probe fails on every member: a voter that answers
	// Status still counts healthy for the gate, or the corrupt one could never be removed.
	s = steady3()
	s.Etcd.Alarms = alarm0
	s.Etcd.Hash = divergence.Result{Outcome: divergence.Diverged, Revision: 40, Named: []uint64{3}, UnderAlarm: true}
	for i := range s.Members {
		s.Members[i].PodReady, s.Members[i].Ready = false, false
	}
	if got := Next(classify(s)); got.Kind != KindRemove || got.Member != "c" {
		t.Errorf("alarm 0, every Pod unready, c named: Next = %+v, want c removed", got)
	}
	// Without the alarm, unready Pods count unhealthy as before.
	s.Etcd.Alarms = nil
	if got := Next(classify(s)); got.Kind == KindRemove {
		t.Errorf("no alarm, every Pod unready: Next = %+v, want the gate to refuse", got)
	}
	s = steady3()
	s.Members, s.PVCs = s.Members[:2], s.PVCs[:2]
	s.Target = 2
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"))
	s.Etcd.Alarms = alarm0
	s.Etcd.Hash = divergence.Result{Outcome: divergence.Incomplete, Revision: 41, UnderAlarm: true}
	// Incomplete under the alarm (a member did not answer): kept.
	s.Etcd.Hash.Outcome = divergence.Incomplete
	if got := Next(classify(s)); got.Kind == KindDisarmCorrupt {
		t.Errorf("alarm 0, incomplete comparison: Next = %+v, want the alarm kept", got)
	}
}
