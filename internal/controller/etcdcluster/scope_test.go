package etcdcluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

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

// TestRetainedPVCs: a PVC an earlier cluster of the same name kept is foreign, and carries its
// recorded cluster ID, until the cluster latches that ID; then it is the cluster's own again.
// Owned, younger or unstamped PVCs are never taken for retained data.
func TestRetainedPVCs(t *testing.T) {
	t.Parallel()
	created := metav1.NewTime(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", UID: "new", CreationTimestamp: created}}
	pvc := func(age time.Duration, owner types.UID, annotations map[string]string) *corev1.PersistentVolumeClaim {
		p := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-etcd-a", Annotations: annotations,
			CreationTimestamp: metav1.NewTime(created.Add(-age))}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "EtcdCluster", Name: "etcd", UID: owner, Controller: ptr.To(true)}}
		}
		return p
	}
	stamped := map[string]string{etcdv1alpha2.AnnotationMemberUID: "m", etcdv1alpha2.AnnotationClusterID: "c1d"}
	for name, tc := range map[string]struct {
		pvc      *corev1.PersistentVolumeClaim
		latched  string
		retained string
		foreign  bool
	}{
		"kept by an earlier cluster":      {pvc(time.Hour, "", stamped), "", "c1d", true},
		"kept, and its ID latched":        {pvc(time.Hour, "", stamped), "c1d", "c1d", false},
		"kept, another ID latched":        {pvc(time.Hour, "", stamped), "e2f", "c1d", true},
		"still owned by the old cluster":  {pvc(time.Hour, "old", stamped), "", "", true},
		"no cluster ID recorded":          {pvc(time.Hour, "", map[string]string{etcdv1alpha2.AnnotationMemberUID: "m"}), "", "", true},
		"this cluster's own, unowned":     {pvc(-time.Hour, "", stamped), "c1d", "", false},
		"this cluster's own, owned by it": {pvc(-time.Hour, "new", stamped), "c1d", "", false},
		// Re-owned (reclaimPolicy Delete) right after its re-adoption: an e2e-full run re-adopted
		// one of three retained PVCs, the member controller re-owned it, it turned foreign for
		// being older than the cluster, and the other two were never re-adopted (no quorum).
		"kept, taken over and re-owned by this cluster": {pvc(time.Hour, "new", stamped), "c1d", "", false},
	} {
		cur := c.DeepCopy()
		cur.Status.ClusterID = tc.latched
		if got := retainedClusterID(cur, tc.pvc); got != tc.retained {
			t.Errorf("%s: retained %q, want %q", name, got, tc.retained)
		}
		if got := foreignPVC(cur, tc.pvc); got != tc.foreign {
			t.Errorf("%s: foreign %t, want %t", name, got, tc.foreign)
		}
	}
}
