package etcdcluster

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// Step functions are tested here for their decision wiring only — which etcd call they make and
// how its error is classified — on paths that end before any Kubernetes write (the pass has no
// Kubernetes client). What they write is proven in test/integration/etcdcluster.

func member(name string, pending bool) etcdv1alpha2.EtcdMember {
	m := etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: typesUID("uid-" + name)},
		Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: "c", InitialCluster: "x"},
	}
	if pending {
		m.Spec.InitialCluster = ""
	}
	return m
}

func testPass(rec *etcdfake.Recorder, members ...etcdv1alpha2.EtcdMember) *pass {
	c := testCluster()
	c.Status.ClusterID = "cid"
	c.Status.Observed = membership.ObservedFromSpec(&c.Spec)
	p := &pass{r: New(nil, nil, nil, nil), cluster: c, original: c.DeepCopy(), now: time.Unix(0, 0), members: members, etcd: rec}
	p.view = membership.Etcd{Known: true, Members: rec.Members, Statuses: map[uint64]etcdclient.Status{}}
	for _, e := range rec.Members {
		p.view.Statuses[e.ID] = etcdclient.Status{ID: e.ID, Leader: 1}
	}
	p.view.Leader = 1
	return p
}

func isWaiting(err error, after time.Duration) bool {
	var w *errWaiting
	return errors.As(err, &w) && w.after == after
}

func TestPromoteNotInSyncIsWaiting(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{}
	rec.SetError(etcdfake.MemberPromote, etcdclient.NewError("MemberPromote", etcdclient.ErrLearnerNotReady))
	p := testPass(rec, member("p", false))
	err := p.promote(context.Background(), membership.Action{Kind: membership.KindPromote, Member: "p", MemberID: 7})
	if !isWaiting(err, membership.PromoteRetry) {
		t.Fatalf("promote = %v, want waiting %s", err, membership.PromoteRetry)
	}
	if got := rec.Calls(); len(got) != 1 || got[0].String() != "MemberPromote(7)" {
		t.Errorf("calls = %v", got)
	}
}

func TestJoinRefusedByEtcdIsWaiting(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a.c.ns.svc:2380"}}}}
	rec.SetError(etcdfake.MemberAddAsLearner, etcdclient.NewError("MemberAddAsLearner", etcdclient.ErrUnhealthyCluster))
	a, p := member("a", false), member("p", true)
	a.Status.IsVoter = true
	pa := testPass(rec, a, p)
	pa.pods = map[string]*corev1.Pod{"a": {Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}}
	act := membership.Next(pa.scope())
	if act.Kind != membership.KindJoin || act.Member != "p" || act.Gate == nil || !act.Gate.Allowed {
		t.Fatalf("planned %+v, want an allowed Join of p", act)
	}
	err := pa.join(context.Background(), act)
	if !isWaiting(err, membership.MembershipPoll) {
		t.Fatalf("join = %v, want waiting", err)
	}
	if n := rec.Count(etcdfake.MemberList); n != 1 {
		t.Errorf("MemberList re-reads = %d, want 1 before the add", n)
	}
}

func TestMemberRemoveNotFoundIsSuccess(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{}
	rec.SetError(etcdfake.MemberRemove, etcdclient.NewError("MemberRemove", etcdclient.ErrMemberNotFound))
	if err := testPass(rec).memberRemove(context.Background(), 9); err != nil {
		t.Errorf("memberRemove of an absent member = %v, want success", err)
	}
	rec.SetError(etcdfake.MemberRemove, etcdclient.NewError("MemberRemove", etcdclient.ErrNotEnoughStartedMembers))
	if err := testPass(rec).memberRemove(context.Background(), 9); !isWaiting(err, membership.MembershipPoll) {
		t.Errorf("memberRemove refused by etcd = %v, want waiting", err)
	}
	boom := etcdclient.NewError("MemberRemove", nil)
	rec.SetError(etcdfake.MemberRemove, boom)
	err := testPass(rec).memberRemove(context.Background(), 9)
	var w *errWaiting
	if err == nil || errors.As(err, &w) || !errors.Is(err, boom) {
		t.Errorf("an unclassified error = %v, want it returned (transient)", err)
	}
}

func TestMoveLeaderRefusedIsWaiting(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{}
	rec.SetError(etcdfake.MoveLeader, etcdclient.NewError("MoveLeader", etcdclient.ErrBadLeaderTransferee))
	err := testPass(rec).moveLeader(context.Background(), membership.Action{Kind: membership.KindMoveLeader, Member: "v", MemberID: 2})
	if !isWaiting(err, membership.MembershipPoll) {
		t.Errorf("moveLeader = %v, want waiting", err)
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

// TestRemoveFirstIsReadByPresence: behaviour.md §7 ranks "members annotated remove-first"
// second, and the annotation's value carries nothing (api.md §6.2). An empty value, which
// "kubectl annotate ... remove-first=" writes, must rank the member first like any other value.
func TestRemoveFirstIsReadByPresence(t *testing.T) {
	t.Parallel()
	for _, value := range []string{"", "true", "draining node-3"} {
		t.Run("value "+value, func(t *testing.T) {
			t.Parallel()
			ms := []etcdv1alpha2.EtcdMember{member("a", false), member("b", false), member("c", false)}
			ms[0].Annotations = map[string]string{etcdv1alpha2.AnnotationRemoveFirst: value}
			var voters []etcdclient.Member
			for i := range ms {
				voters = append(voters, etcdclient.Member{ID: uint64(i + 1), Name: ms[i].Name, PeerURLs: []string{desired.PeerURL(&ms[i])}})
			}
			s := testPass(&etcdfake.Recorder{Members: voters}, ms...).scope()
			if !s.Members[0].RemoveFirst {
				t.Fatalf("member a annotated %s=%q: RemoveFirst = false", etcdv1alpha2.AnnotationRemoveFirst, value)
			}
			// Without the annotation c would go (same age, name descending), and a leads.
			if got := membership.RankVictims(&s, s.Running())[0].Name; got != "a" {
				t.Errorf("victim = %s, want a", got)
			}
		})
	}
}
