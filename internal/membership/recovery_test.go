package membership

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// stranded is a Memory cluster of target 3 whose etcd does not answer linearizably; members
// listed in answering answered with the given log tails, all listing voters.
func stranded(voters []etcdclient.Member, answering map[string]quorum.LogPosition, members ...Member) Scope {
	s := Scope{Target: 3, ClusterID: "cid", Now: t0.Add(time.Hour), Memory: true, Members: members,
		Stranded: Stranded{Survivors: map[string]Survivor{}}}
	for name, tail := range answering {
		var id uint64
		for _, e := range voters {
			if e.Name == name {
				id = e.ID
			}
		}
		s.Stranded.Survivors[name] = Survivor{Status: etcdclient.Status{ID: id, RaftAppliedIndex: tail.Index - 1},
			Members: voters, Tail: tail, TailKnown: true, ClusterID: "cid"}
	}
	return s
}

func withID(m Member, id uint64) Member { m.MemberID = id; return m }

func dataLost(m Member) Member {
	m.Unhealthy, m.HealthyReason, m.Ready, m.PodRunning, m.PodReady = true, health.ReasonDataLost, false, false, false
	return m
}

// TestRecoveryStartsAutomaticallyInTheTwoVoterWindow is the story: a 3-member Memory
// cluster with two voters loses the second voter's Pod; the survivor holds every acknowledged
// write, so recovery starts by itself.
func TestRecoveryStartsAutomaticallyInTheTwoVoterWindow(t *testing.T) {
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b")}, map[string]quorum.LogPosition{"a": {Term: 2, Index: 40}},
		withID(mem("a", 1), 1), withID(dataLost(mem("b", 2)), 2))
	a := Next(s)
	if a.Kind != KindStartRecovery || a.Member != "a" || a.Recovery == nil || a.Recovery.Mode != etcdv1alpha2.QuorumRecoveryAutomatic ||
		a.Recovery.Index != 40 || a.Recovery.Term != 2 || a.Recovery.MemberID != "1" {
		t.Fatalf("Next = %+v (recovery %+v), want an automatic recovery from a at term 2, index 40", a, a.Recovery)
	}
}

// TestRecoveryPicksTheLongerLogWhenCommitIndexesTie: two survivors of four voters report the
// same applied index, but b's log holds one more entry (one the lost leader acknowledged).
func TestRecoveryPicksTheLongerLogWhenCommitIndexesTie(t *testing.T) {
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b"), voter(3, "c"), voter(4, "d")},
		map[string]quorum.LogPosition{"a": {Term: 3, Index: 41}, "b": {Term: 3, Index: 42}},
		withID(mem("a", 1), 1), withID(mem("b", 2), 2), withID(dataLost(mem("c", 3)), 3), withID(dataLost(mem("d", 4)), 4))
	for name, sv := range s.Stranded.Survivors {
		sv.Status.RaftIndex, sv.Status.RaftAppliedIndex = 41, 41
		s.Stranded.Survivors[name] = sv
	}
	if a := Next(s); a.Kind != KindStartRecovery || a.Member != "b" || a.Recovery.Index != 42 {
		t.Fatalf("Next = %+v, want recovery from b (index 42)", a)
	}
}

// TestRecoveryWaitsForAPersonWhenWritesMayBeLost: 1 of 3 left. Nothing happens by itself; after
// 10 minutes the condition names the candidate and the approval; a stale value is refused; the
// exact value starts an approved recovery.
func TestRecoveryWaitsForAPersonWhenWritesMayBeLost(t *testing.T) {
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b"), voter(3, "c")}, map[string]quorum.LogPosition{"a": {Term: 2, Index: 40}},
		withID(mem("a", 1), 1), withID(dataLost(mem("b", 2)), 2), withID(dataLost(mem("c", 3)), 3))
	s.Members[0].Ready, s.Members[0].PodReady = false, false
	s.QuorumLostSince = s.Now.Add(-time.Minute)
	if a := Next(s); a.Kind != KindWait {
		t.Fatalf("Next = %+v, want a wait", a)
	}
	if note := recoveryNote(&s); strings.Contains(note, "approve") {
		t.Fatalf("the candidate is named before %s: %s", GuardedRecoveryDelay, note)
	}
	s.QuorumLostSince = s.Now.Add(-GuardedRecoveryDelay)
	want := "cid/a/39"
	if note := recoveryNote(&s); !strings.Contains(note, etcdv1alpha2.AnnotationApproveRecovery+"="+want) {
		t.Fatalf("note %q does not name the approval %s", note, want)
	}
	s.Approval = "cid/a/38"
	if a := Next(s); a.Kind != KindRefuseApproval || !strings.Contains(a.Message, want) {
		t.Fatalf("stale approval: Next = %+v, want a refusal naming %s", a, want)
	}
	s.Approval = want
	if a := Next(s); a.Kind != KindStartRecovery || a.Recovery.Mode != etcdv1alpha2.QuorumRecoveryApproved {
		t.Fatalf("approved: Next = %+v, want an approved recovery", a)
	}
}

// TestNoRecoveryWhileAVoterMayReturn: the second voter of the 2-voter window is down with its
// data (a PVC member restarting): nothing is forced, the cluster waits for it.
func TestNoRecoveryWhileAVoterMayReturn(t *testing.T) {
	down := withID(mem("b", 2), 2)
	down.Ready, down.PodRunning, down.PodReady = false, false, false
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b")}, map[string]quorum.LogPosition{"a": {Term: 2, Index: 40}},
		withID(mem("a", 1), 1), down)
	s.Memory = false
	if a := Next(s); a.Kind != KindWait {
		t.Fatalf("Next = %+v, want a wait for b", a)
	}
}

// TestRecoverySteps walks a recorded recovery: stop the others, wait for their Pods, force,
// remove them once the survivor is alone, finish.
func TestRecoverySteps(t *testing.T) {
	rec := &etcdv1alpha2.QuorumRecovery{Member: "a", MemberID: "1", Term: 2, Index: 40, Mode: etcdv1alpha2.QuorumRecoveryAutomatic}
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b")}, map[string]quorum.LogPosition{"a": {Term: 2, Index: 40}},
		withID(mem("a", 1), 1), withID(dataLost(mem("b", 2)), 2), mem("c", 3))
	s.Recovery = rec
	steps := []struct {
		change func(*Scope)
		kind   Kind
		member string
	}{
		{func(*Scope) {}, KindStopForRecovery, "b"},
		{func(s *Scope) { s.Members[1].Dormant = true }, KindStopForRecovery, "c"},
		{func(s *Scope) { s.Members[2].Dormant = true }, KindWait, "c"},
		{func(s *Scope) { s.Members[2].PodRunning = false }, KindForceNewCluster, "a"},
		{func(s *Scope) {
			s.Etcd = healthyEtcd(1, voter(1, "a"))
			s.Stranded = Stranded{}
		}, KindRemove, "b"},
		{func(s *Scope) { s.Members[1].Deleting, s.Members[1].RemovalReason = true, RemovalReasonQuorumRecovery }, KindRemove, "c"},
		{func(s *Scope) { s.Members = s.Members[:1] }, KindFinishRecovery, "a"},
	}
	for i, st := range steps {
		st.change(&s)
		a := Next(s)
		if a.Kind != st.kind || a.Member != st.member || a.Reason != ReasonRecoveringQuorum {
			t.Fatalf("step %d: Next = %+v, want %s of %s (RecoveringQuorum)", i, a, st.kind, st.member)
		}
		if a.Kind == KindForceNewCluster && a.ForceValue != "cid/1/2/40" {
			t.Fatalf("force value %q, want cid/1/2/40", a.ForceValue)
		}
		if a.Kind == KindRemove && a.RemovalReason != RemovalReasonQuorumRecovery {
			t.Fatalf("removal reason %q", a.RemovalReason)
		}
	}
}

// TestRecoveryAbortsWhenTheSurvivorGoes: the survivor's Pod is lost before the force; the record
// is cleared and the next pass decides again.
func TestRecoveryAbortsWhenTheSurvivorGoes(t *testing.T) {
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b")}, nil, withID(dataLost(mem("a", 1)), 1), withID(dataLost(mem("b", 2)), 2))
	s.Recovery = &etcdv1alpha2.QuorumRecovery{Member: "a", MemberID: "1", Mode: etcdv1alpha2.QuorumRecoveryAutomatic}
	if a := Next(s); a.Kind != KindAbortRecovery {
		t.Fatalf("Next = %+v, want an abort", a)
	}
}

// TestSurvivorsOfAnotherClusterAreNotCandidates: a guard that reports another cluster ID in its
// WAL is not counted as answering.
func TestSurvivorsOfAnotherClusterAreNotCandidates(t *testing.T) {
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b")}, map[string]quorum.LogPosition{"a": {Term: 2, Index: 40}},
		withID(mem("a", 1), 1), withID(dataLost(mem("b", 2)), 2))
	sv := s.Stranded.Survivors["a"]
	sv.ClusterID = "other"
	s.Stranded.Survivors["a"] = sv
	if a := Next(s); a.Kind == KindStartRecovery {
		t.Fatalf("Next = %+v: recovered from a member of another cluster", a)
	}
}

// TestRecoveryIsNotHeldByADefrag: an EtcdDefrag that was Running when quorum went cannot go on
// either; the recovery does not wait for its deadline.
func TestRecoveryIsNotHeldByADefrag(t *testing.T) {
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b")}, map[string]quorum.LogPosition{"a": {Term: 2, Index: 40}},
		withID(mem("a", 1), 1), withID(dataLost(mem("b", 2)), 2))
	s.DefragRunning = []string{"nightly"}
	if a := Next(s); a.Kind != KindStartRecovery {
		t.Fatalf("Next = %+v, want the recovery to start", a)
	}
}

// TestRecoveryEndsWhenTheForceNeverHappens: a guard that refuses the request leaves the survivor
// stranded; after ForceTimeout the record is cleared and decided again.
func TestRecoveryEndsWhenTheForceNeverHappens(t *testing.T) {
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b")}, map[string]quorum.LogPosition{"a": {Term: 2, Index: 40}},
		withID(mem("a", 1), 1), with(withID(dataLost(mem("b", 2)), 2), func(m *Member) { m.Dormant = true }))
	s.Recovery = &etcdv1alpha2.QuorumRecovery{Member: "a", MemberID: "1", Term: 2, Index: 40, Mode: etcdv1alpha2.QuorumRecoveryAutomatic,
		StartedAt: metav1.NewTime(s.Now.Add(-time.Minute))}
	if a := Next(s); a.Kind != KindForceNewCluster {
		t.Fatalf("within the timeout: Next = %+v, want the force", a)
	}
	s.Recovery.StartedAt = metav1.NewTime(s.Now.Add(-ForceTimeout - time.Second))
	if a := Next(s); a.Kind != KindAbortRecovery {
		t.Fatalf("after the timeout: Next = %+v, want an abort", a)
	}
}

// TestOrphanPVCsReadoptedWhileQuorumIsLost: a cluster re-created over the PVCs an earlier one kept
// (reclaimPolicy Retain) re-adopts them one per pass while etcd does not answer; the first one
// re-adopted answers alone, without quorum. The recovery rule must not hold the others back (an
// e2e-full run of TestRetainedDataSurvivesRecreate stalled exactly so): voters whose PVC exists
// are down, not lost, and nothing is recovered by itself.
func TestOrphanPVCsReadoptedWhileQuorumIsLost(t *testing.T) {
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b"), voter(3, "c")}, map[string]quorum.LogPosition{"a": {Term: 2, Index: 40}},
		withID(mem("a", 1), 1))
	s.Memory = false
	s.PVCs = []PVC{{Name: "data-a", Member: "a", MemberUID: "uid-a", MemberRecreated: true}, {Name: "data-b", Member: "b", MemberUID: "uid-gone-b", PeerURL: peer("b")},
		{Name: "data-c", Member: "c", MemberUID: "uid-gone-c", PeerURL: peer("c")}}
	if a := Next(s); a.Kind != KindReadopt {
		t.Fatalf("Next = %+v, want the next orphan PVC re-adopted", a)
	}
}
