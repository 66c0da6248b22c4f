package defrag

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

var t0 = time.Date(2025, 1, 1, 3, 0, 0, 0, time.UTC)

// healthy returns a healthy voter with 100Mi of 300Mi reclaimable... of a 1Gi quota.
func healthy(name string, id uint64) Member {
	return Member{Name: name, ID: id, Answered: true, PodReady: true, Sizes: Sizes{DBSize: 300 * mib, DBSizeInUse: 50 * mib, Quota: 1024 * mib}}
}

func view(leader uint64, ms ...Member) View { return View{Members: ms, Leader: leader, Now: t0} }

func outcomesOf(ms []etcdv1alpha2.DefragMemberStatus) map[string]etcdv1alpha2.DefragOutcome {
	out := map[string]etcdv1alpha2.DefragOutcome{}
	for _, m := range ms {
		out[m.Name] = m.Outcome
	}
	return out
}

func TestStartOrdersFollowersByNameThenTheLeader(t *testing.T) {
	t.Parallel()
	compact := healthy("a", 1)
	compact.Sizes.DBSizeInUse = compact.Sizes.DBSize
	v := view(2, healthy("c", 3), healthy("b", 2), compact)
	ms := Start(nil, v)
	var order []string
	for _, m := range ms {
		order = append(order, m.Name+"/"+string(m.Role)+"/"+string(m.Outcome))
	}
	want := []string{"a/follower/Skipped", "c/follower/Pending", "b/leader/Pending"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("Start order (-want +got):\n%s", diff)
	}
	if ms[0].FinishedAt == nil || ms[0].Reason == "" || ms[1].DBSizeBefore != 300*mib {
		t.Errorf("Start did not record the skip's time and reason or the size before: %+v", ms)
	}
}

// drive runs the planner to the end, recording each step and applying it the way the
// controller does: a defragmentation halves the member's file, a move changes the leader.
func drive(t *testing.T, r Run, v View) []string {
	t.Helper()
	var steps []string
	for range 20 {
		s := Next(r, v)
		switch s.Kind {
		case StepDefragment:
			steps = append(steps, "defrag "+s.Member)
			r.Members = Record(r.Members, s.Member, etcdv1alpha2.DefragOutcomeDefragmented, 300*mib, 50*mib, "", v.Now)
		case StepMoveLeader:
			steps = append(steps, "move "+s.Target)
			for _, m := range v.Members {
				if m.Name == s.Target {
					v.Leader = m.ID
				}
			}
		case StepSkip:
			steps = append(steps, "skip "+s.Member)
			r.Members = Record(r.Members, s.Member, etcdv1alpha2.DefragOutcomeSkipped, 0, 0, s.Message, v.Now)
		default:
			return append(steps, string(s.Kind)+" "+string(s.Phase))
		}
	}
	t.Fatal("the planner did not finish in 20 steps")
	return nil
}

func TestNextGoesFollowersFirstLeaderLastAfterMoveLeader(t *testing.T) {
	t.Parallel()
	v := view(1, healthy("a", 1), healthy("b", 2), healthy("c", 3))
	r := Run{Members: Start(nil, v), Started: t0, Quota: 1024 * mib}
	want := []string{"defrag b", "defrag c", "move b", "defrag a", "Finish Complete"}
	if diff := cmp.Diff(want, drive(t, r, v)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestNextDoesNotMoveLeadershipInSmallClusters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    View
		want []string
	}{
		{"one voter", view(1, healthy("a", 1)), []string{"defrag a", "Finish Complete"}},
		// Defragmenting either of two voters leaves one of two: no quorum (docs/design/quorum.md).
		{"two voters", view(1, healthy("a", 1), healthy("b", 2)), []string{"Wait "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Run{Members: Start(&etcdv1alpha2.DefragRule{All: true}, tc.v), Started: t0, Quota: 1024 * mib}
			if diff := cmp.Diff(tc.want, drive(t, r, tc.v)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextSingleVoterIsDisruptive(t *testing.T) {
	t.Parallel()
	v := view(1, healthy("a", 1))
	s := Next(Run{Members: Start(nil, v), Started: t0}, v)
	if s.Kind != StepDefragment || !s.Disruptive {
		t.Errorf("single voter: %+v, want a disruptive defragmentation", s)
	}
}

func TestNextIsGatedByQuorum(t *testing.T) {
	t.Parallel()
	down := healthy("c", 3)
	down.PodReady = false
	silent := healthy("b", 2)
	silent.Answered = false
	cases := []struct {
		name string
		v    View
		want StepKind
		who  string
	}{
		{"3 voters, one unhealthy: the healthy follower waits", view(1, healthy("a", 1), healthy("b", 2), down), StepWait, "b"},
		{"3 voters, one silent: it is not evaluated and the others wait", view(1, healthy("a", 1), silent, healthy("c", 3)), StepWait, "b"},
		{"5 voters, one unhealthy: a healthy one may go", view(1, healthy("a", 1), healthy("b", 2), down, healthy("d", 4), healthy("e", 5)), StepDefragment, "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			all := &etcdv1alpha2.DefragRule{All: true}
			s := Next(Run{Rule: all, Members: Start(all, tc.v), Started: t0}, tc.v)
			if s.Kind != tc.want || s.Member != tc.who || (s.Kind == StepWait && s.Reason != ReasonWaitingForHealthyMembers) {
				t.Errorf("Next = %+v, want %s of %s", s, tc.want, tc.who)
			}
		})
	}
}

func TestNextWaitsWhenLeadershipCannotMove(t *testing.T) {
	t.Parallel()
	v := view(1, healthy("a", 1), healthy("b", 2), healthy("c", 3))
	ms := Start(nil, v)
	ms = Record(ms, "b", etcdv1alpha2.DefragOutcomeDefragmented, 0, 1, "", t0)
	ms = Record(ms, "c", etcdv1alpha2.DefragOutcomeDefragmented, 0, 1, "", t0)
	v.Members[1].PodReady, v.Members[2].PodReady = false, false
	if s := Next(Run{Members: ms, Started: t0}, v); s.Kind != StepWait || s.Member != "a" {
		t.Errorf("Next = %+v, want the leader to wait", s)
	}
}

func TestNextSkipsMembersThatLeftOrNoLongerQualify(t *testing.T) {
	t.Parallel()
	silent := healthy("b", 2)
	silent.Answered = false
	ms := Start(nil, view(1, healthy("a", 1), silent, healthy("c", 3), healthy("d", 4)))
	compact := healthy("b", 2)
	compact.Sizes.DBSizeInUse = compact.Sizes.DBSize        // answers now, with nothing to reclaim
	v := view(1, healthy("a", 1), compact, healthy("d", 4)) // c left the cluster
	got := drive(t, Run{Members: ms, Started: t0, Quota: 1024 * mib}, v)
	want := []string{"skip b", "skip c", "defrag d", "move b", "defrag a", "Finish Complete"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestNextFinishes(t *testing.T) {
	t.Parallel()
	quota := int64(100 * mib)
	small := func(name string, id uint64, db int64) Member {
		m := healthy(name, id)
		m.Sizes = Sizes{DBSize: db * mib, DBSizeInUse: db * mib, Quota: quota}
		return m
	}
	all := &etcdv1alpha2.DefragRule{All: true}
	done := func(v View, failed string) []etcdv1alpha2.DefragMemberStatus {
		ms := Start(all, v)
		for _, m := range ms {
			o := etcdv1alpha2.DefragOutcomeDefragmented
			if m.Name == failed {
				o = etcdv1alpha2.DefragOutcomeFailed
			}
			ms = Record(ms, m.Name, o, 0, 1, "", t0)
		}
		return ms
	}
	below := view(1, small("a", 1, 10), small("b", 2, 20))
	over := view(1, small("a", 1, 10), small("b", 2, 100))
	cases := []struct {
		name    string
		v       View
		noSpace bool
		failed  string
		want    Step
	}{
		{"complete", below, false, "", Step{Kind: StepFinish, Phase: etcdv1alpha2.DefragPhaseComplete, Reason: ReasonComplete}},
		{"a member failed", below, false, "b", Step{Kind: StepFinish, Phase: etcdv1alpha2.DefragPhaseFailed, Reason: ReasonMembersFailed}},
		{"NOSPACE, every member below the quota: disarm", below, true, "", Step{Kind: StepDisarm, Phase: etcdv1alpha2.DefragPhaseComplete, Reason: ReasonComplete}},
		{"NOSPACE, a member at the quota: keep armed", over, true, "", Step{Kind: StepFinish, Phase: etcdv1alpha2.DefragPhaseComplete, Reason: ReasonComplete}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := tc.v
			v.NoSpace = tc.noSpace
			s := Next(Run{Rule: all, Members: done(v, tc.failed), Started: t0, Quota: quota}, v)
			if s.Message == "" {
				t.Error("no message")
			}
			s.Message = ""
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("Next (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextFailsPastTheDeadline(t *testing.T) {
	t.Parallel()
	v := view(1, healthy("a", 1), healthy("b", 2), healthy("c", 3))
	r := Run{Members: Start(nil, v), Started: t0}
	v.Now = t0.Add(3*MemberTimeout - time.Nanosecond)
	if s := Next(r, v); s.Kind != StepDefragment {
		t.Errorf("before the deadline: %+v", s)
	}
	v.Now = t0.Add(3 * MemberTimeout)
	if s := Next(r, v); s.Kind != StepFinish || s.Phase != etcdv1alpha2.DefragPhaseFailed || s.Reason != ReasonDeadlineExceeded {
		t.Errorf("at the deadline: %+v", s)
	}
	ms := SkipPending(r.Members, "deadline", v.Now)
	if got := outcomesOf(ms); got["a"] != etcdv1alpha2.DefragOutcomeSkipped || got["b"] != etcdv1alpha2.DefragOutcomeSkipped {
		t.Errorf("SkipPending: %v", got)
	}
}

func TestRecord(t *testing.T) {
	t.Parallel()
	ms := []etcdv1alpha2.DefragMemberStatus{{Name: "a", Outcome: etcdv1alpha2.DefragOutcomePending, DBSizeBefore: 10}}
	got := Record(ms, "a", etcdv1alpha2.DefragOutcomeDefragmented, 12, 4, "", t0)
	if ms[0].Outcome != etcdv1alpha2.DefragOutcomePending {
		t.Error("Record modified its input")
	}
	if g := got[0]; g.DBSizeBefore != 12 || g.DBSizeAfter != 4 || g.ReclaimedBytes != 8 || g.FinishedAt == nil || Defragmented(got) != 1 {
		t.Errorf("Record = %+v", g)
	}
}
