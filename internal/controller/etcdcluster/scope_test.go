package etcdcluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

func TestMemberViewCarriesContainerStart(t *testing.T) {
	t.Parallel()
	o := testObservation(&etcdfake.Recorder{}, member("m", false))
	started := o.now.Add(-2 * time.Second)
	o.pods = map[string]*corev1.Pod{"m": {
		ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "pod-uid"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: desired.ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
		}}},
	}}
	got := o.memberView(&o.members[0], o.cluster.Status.Observed)
	if !got.PodRunning || got.PodReady || !got.ContainerStarted.Equal(started) {
		t.Errorf("memberView = running %v, ready %v, started %v; want running, not ready, started %v", got.PodRunning, got.PodReady, got.ContainerStarted, started)
	}
}

// A member counts as Ready only while the shared cache also shows its Pod Ready: the
// EtcdMember's condition lags a deleted Pod by one member-controller pass, and status counted
// such members, saying "member Pods are Ready but no member answers" about Pods that were gone
// (docs/e2e-lifecycle.md, finding 8).
func TestMemberViewReadyNeedsTheReadyPod(t *testing.T) {
	t.Parallel()
	m := member("m", false)
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionReady, Status: metav1.ConditionTrue, Reason: "PodReady"})
	readyPod := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "pod-uid"},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		if mut != nil {
			mut(p)
		}
		return p
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"Ready Pod", readyPod(nil), true},
		{"no Pod", nil, false},
		{"Pod being deleted", readyPod(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), false},
		{"Pod failed", readyPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
	} {
		o := testObservation(&etcdfake.Recorder{}, m)
		o.pods = map[string]*corev1.Pod{}
		if tc.pod != nil {
			o.pods["m"] = tc.pod
		}
		if got := o.memberView(&o.members[0], o.cluster.Status.Observed).Ready; got != tc.want {
			t.Errorf("%s: Ready %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRemoveFirstIsReadByPresence: docs/design/membership-flows.md, "Scale down" ranks "members annotated remove-first"
// second, and the annotation's value carries nothing (docs/api.md, "Annotations"). An empty value, which
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
			o := testObservation(&etcdfake.Recorder{Members: voters}, ms...)
			s := o.scopeFor(o.cluster.Status.Observed)
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

// TestScopeCarriesTheReconcilersGraceAndSettles: the orphan grace and the settle times the
// Reconciler was built with reach the planner's scope.
func TestScopeCarriesTheReconcilersGraceAndSettles(t *testing.T) {
	t.Parallel()
	r := New(nil, nil, nil, nil, WithOrphanMemberGrace(3*time.Second), WithSettles(time.Second, 2*time.Second))
	o := &observation{cluster: &etcdv1alpha2.EtcdCluster{},
		config: projection{orphanGrace: r.orphanGrace, settles: r.settles}}
	s := o.scopeFor(nil)
	if s.OrphanMemberGrace != 3*time.Second || s.StrictReconfigSettle != time.Second || s.RollSettle != 2*time.Second {
		t.Fatalf("scope grace %s, settles %s and %s; want 3s, 1s and 2s", s.OrphanMemberGrace, s.StrictReconfigSettle, s.RollSettle)
	}
}
