package etcdcluster

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// Executors are tested here for their decision wiring only, which etcd call they make and how
// its error is classified, on paths that end before any Kubernetes write (the executor has no
// Kubernetes client). What they write is proven in test/integration/etcdcluster.

// waitsFor reports a result that ends the pass and asks for another after d, without error.
func waitsFor(res step.Result, err error, d time.Duration) bool {
	return err == nil && res.Done() && res.RequeueAfter() == d
}

func TestPromoteNotInSyncIsWaiting(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{}
	rec.SetError(etcdfake.MemberPromote, etcdclient.NewError("MemberPromote", etcdclient.ErrLearnerNotReady))
	x, _ := testExecutor(testObservation(rec, member("p", false)))
	res, err := x.promote(context.Background(), membership.Action{Kind: membership.KindPromote, Member: "p", MemberID: 7})
	if !waitsFor(res, err, membership.PromoteRetry) {
		t.Fatalf("promote = %+v, %v; want waiting %s", res, err, membership.PromoteRetry)
	}
	if got := rec.Calls(); len(got) != 1 || got[0].String() != "MemberPromote(7)" {
		t.Errorf("calls = %v", got)
	}
}

// joiningObservation is voter a, Ready, and a pending member p the planner adds next.
func joiningObservation(rec *etcdfake.Recorder) *observation {
	a, p := member("a", false), member("p", true)
	a.Status.IsVoter, a.Status.MemberID = true, etcdclient.FormatID(1)
	o := testObservation(rec, a, p)
	o.pods = map[string]*corev1.Pod{"a": {Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}}
	return o
}

func TestJoinRefusedByEtcdIsWaiting(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a.c.ns.svc:2380"}}}}
	rec.SetError(etcdfake.MemberAddAsLearner, etcdclient.NewError("MemberAddAsLearner", etcdclient.ErrUnhealthyCluster))
	x, _ := testExecutor(joiningObservation(rec))
	act := x.plan.Action
	if act.Kind != membership.KindJoin || act.Member != "p" || act.Gate == nil || !act.Gate.Allowed {
		t.Fatalf("planned %+v, want an allowed Join of p", act)
	}
	res, err := x.join(context.Background(), act)
	if !waitsFor(res, err, membership.MembershipPoll) {
		t.Fatalf("join = %+v, %v; want waiting", res, err)
	}
	if n := rec.Count(etcdfake.MemberList); n != 1 {
		t.Errorf("MemberList re-reads = %d, want 1 before the add", n)
	}
}

// TestStillPlannedWaitsWhenEtcdChanged: the step is re-planned over a member list re-read right
// before the mutation; a different answer (another replica acted meanwhile) waits, mutating
// nothing.
func TestStillPlannedWaitsWhenEtcdChanged(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a.c.ns.svc:2380"}}}}
	x, _ := testExecutor(joiningObservation(rec))
	// Another replica added p meanwhile: the join now only patches, no add.
	rec.Members = append(rec.Members, etcdclient.Member{ID: 2, PeerURLs: []string{"http://p.c.ns.svc:2380"}, IsLearner: true})
	res, err := x.stillPlanned(context.Background(), rec, x.plan.Action)
	if err != nil || !res.Done() || res.RequeueAfter() != nextStepDelay {
		t.Fatalf("stillPlanned = %+v, %v; want a wait of %s", res, err, nextStepDelay)
	}
	if m := rec.Mutations(); len(m) != 0 {
		t.Errorf("mutations = %v, want none", m)
	}
}

func TestMemberRemoveNotFoundIsSuccess(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 9}}}
	rec.SetError(etcdfake.MemberRemove, etcdclient.NewError("MemberRemove", etcdclient.ErrMemberNotFound))
	if res, err := memberRemove(context.Background(), rec, testKey, 9); err != nil || res.Done() {
		t.Errorf("memberRemove of an absent member = %+v, %v; want success", res, err)
	}
	rec.SetError(etcdfake.MemberRemove, etcdclient.NewError("MemberRemove", etcdclient.ErrNotEnoughStartedMembers))
	if res, err := memberRemove(context.Background(), rec, testKey, 9); !waitsFor(res, err, membership.MembershipPoll) {
		t.Errorf("memberRemove refused by etcd = %+v, %v; want waiting", res, err)
	}
	boom := etcdclient.NewError("MemberRemove", nil)
	rec.SetError(etcdfake.MemberRemove, boom)
	if res, err := memberRemove(context.Background(), rec, testKey, 9); err == nil || res.Done() || !errors.Is(err, boom) {
		t.Errorf("an unclassified error = %+v, %v; want it returned (transient)", res, err)
	}
}

// TestMemberRemoveOfItselfIsSuccess: etcd routed the removal to the victim, which applied it and
// stopped before answering ("server stopped"). The fresh list no longer names it, so the removal
// is done and reported, not retried into "not found" by a pass that no longer knows it removed
// anything.
func TestMemberRemoveOfItselfIsSuccess(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 1}, {ID: 2}}}
	rec.SetError(etcdfake.MemberRemove, etcdclient.NewError("MemberRemove", etcdclient.ErrUnavailable))
	if res, err := memberRemove(context.Background(), rec, testKey, 9); err != nil || res.Done() {
		t.Errorf("memberRemove answered by the stopped victim = %+v, %v; want success", res, err)
	}
	rec.SetError(etcdfake.MemberList, etcdclient.NewError("MemberList", etcdclient.ErrUnavailable))
	if res, err := memberRemove(context.Background(), rec, testKey, 9); err == nil || res.Done() {
		t.Errorf("memberRemove with no list to confirm it = %+v, %v; want the error returned", res, err)
	}
}

func TestMoveLeaderRefusedIsWaiting(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{}
	rec.SetError(etcdfake.MoveLeader, etcdclient.NewError("MoveLeader", etcdclient.ErrBadLeaderTransferee))
	x, _ := testExecutor(testObservation(rec))
	res, err := x.moveLeader(context.Background(), membership.Action{Kind: membership.KindMoveLeader, Member: "v", MemberID: 2})
	if !waitsFor(res, err, membership.MembershipPoll) {
		t.Errorf("moveLeader = %+v, %v; want waiting", res, err)
	}
}

// TestEveryActionKindHasAnExecutor: a kind the planner can return but the controller cannot
// carry out would fail the pass terminally.
func TestEveryActionKindHasAnExecutor(t *testing.T) {
	t.Parallel()
	x, _ := testExecutor(testObservation(&etcdfake.Recorder{}))
	for _, k := range membership.Kinds() {
		if _, ok := x.executors()[k]; !ok {
			t.Errorf("no executor for %s", k)
		}
	}
}

func TestMetricType(t *testing.T) {
	t.Parallel()
	for k, want := range map[membership.Kind]string{
		membership.KindJoin: metricAddLearner, membership.KindCreateMember: metricAddLearner,
		membership.KindPromote: metricPromote, membership.KindRemove: metricRemove,
		membership.KindRemoveOrphan: metricRemove, membership.KindMoveLeader: metricMoveLeader,
	} {
		if got := metricType(k); got != want {
			t.Errorf("metricType(%s) = %s, want %s", k, got, want)
		}
	}
}
