package etcdmember

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/etcd-operator/etcd-operator/internal/health"
)

// The Nodes the classification reads: the one a terminating Pod is bound to, and the one a
// Pending Pod's volume is pinned to.

// TestPinnedNode: only a volume whose required node affinity names one Node, by hostname
// label or by name, is pinned to it.
func TestPinnedNode(t *testing.T) {
	t.Parallel()
	hostname := func(values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: values}}}
	}
	name := func(v string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}
	}
	pv := func(terms ...corev1.NodeSelectorTerm) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{
			Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}}}
	}
	zone := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}
	both := hostname("n1")
	both.MatchExpressions = append(both.MatchExpressions, zone.MatchExpressions...)
	for name, tc := range map[string]struct {
		pv   *corev1.PersistentVolume
		want nodePin
		ok   bool
	}{
		"local volume, hostname label": {pv: pv(hostname("n1")), want: nodePin{value: "n1", byHostname: true}, ok: true},
		"by name":                      {pv: pv(name("n1")), want: nodePin{value: "n1"}, ok: true},
		"the same node in every term":  {pv: pv(hostname("n1"), hostname("n1")), want: nodePin{value: "n1", byHostname: true}, ok: true},
		"no node affinity":             {pv: &corev1.PersistentVolume{}},
		"no required terms":            {pv: &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{}}}},
		"no terms":                     {pv: pv()},
		"two nodes in one term":        {pv: pv(hostname("n1", "n2"))},
		"two nodes in two terms":       {pv: pv(hostname("n1"), hostname("n2"))},
		"a zone, not a node":           {pv: pv(zone)},
		"a node and more":              {pv: pv(both)},
		"NotIn":                        {pv: pv(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n1"}}}})},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := pinnedNode(tc.pv)
			if got != tc.want || ok != tc.ok {
				t.Errorf("pinnedNode = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestAwaitingNode: a PersistentVolume is read only for a Pending Pod that no Node runs.
func TestAwaitingNode(t *testing.T) {
	t.Parallel()
	pendingPod := func(opts ...func(*corev1.Pod)) *corev1.Pod {
		return pod(false, append([]func(*corev1.Pod){func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }}, opts...)...)
	}
	bound := func(p *corev1.Pod) { p.Spec.NodeName = "n1" }
	for name, tc := range map[string]struct {
		p    *corev1.Pod
		want bool
	}{
		"no Pod":                            {},
		"running":                           {p: pod(true)},
		"Pending, not bound to a Node":      {p: pendingPod(), want: true},
		"no phase yet":                      {p: pod(false, func(p *corev1.Pod) { p.Status.Phase = "" }), want: true},
		"Pending, refused by the scheduler": {p: pendingPod(unschedulablePod(healthNow)), want: true},
		"Pending on its Node (starting)":    {p: pendingPod(bound)},
		"Pending and terminating":           {p: pendingPod(func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(healthNow)) })},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := awaitingNode(tc.p); got != tc.want {
				t.Errorf("awaitingNode = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeObservation(t *testing.T) {
	t.Parallel()
	since := metav1.NewTime(healthNow.Add(-time.Minute))
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: since}}}}
	want := &health.Node{Name: "n1", NotReadySince: since.Time, Unreachable: true}
	if diff := cmp.Diff(want, nodeObservation(n)); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}
	n.Spec.Taints = nil
	n.Status.Conditions[0].Status = corev1.ConditionTrue
	if got := nodeObservation(n); !got.Ready || got.Unreachable || !got.NotReadySince.IsZero() {
		t.Errorf("ready node observed as %+v", got)
	}
}

// TestPVNode is the decision wiring of the pinned-Node lookup: the PersistentVolume is read
// (uncached) only for a Pending, unplaced Pod with a bound claim; the Node is found by its
// hostname label, then by name, and is gone only when neither finds it.
func TestPVNode(t *testing.T) {
	t.Parallel()
	notReady := metav1.NewTime(healthNow.Add(-time.Minute))
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: notReady}}}}
	}
	hostLabel := map[string]string{corev1.LabelHostname: "host-1"}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"host-1"}}}}}}}}}
	boundPVC := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	pendingPod := pod(false, unschedulablePod(healthNow))
	for name, tc := range map[string]struct {
		pod       *corev1.Pod
		pvc       *corev1.PersistentVolumeClaim
		objects   []client.Object
		want      *health.Node
		wantReads int
	}{
		"the Node carrying the hostname label": {pod: pendingPod, pvc: boundPVC, wantReads: 1,
			objects: []client.Object{pv, node("i-0abc", hostLabel), node("host-2", nil)},
			want:    &health.Node{Name: "i-0abc", NotReadySince: notReady.Time}},
		"no label, the Node named like the hostname": {pod: pendingPod, pvc: boundPVC, wantReads: 1,
			objects: []client.Object{pv, node("host-1", nil)},
			want:    &health.Node{Name: "host-1", NotReadySince: notReady.Time}},
		"no such Node: gone": {pod: pendingPod, pvc: boundPVC, wantReads: 1,
			objects: []client.Object{pv, node("host-2", nil)},
			want:    &health.Node{Name: "host-1", Gone: true}},
		"two Nodes with the hostname: unknown": {pod: pendingPod, pvc: boundPVC, wantReads: 1,
			objects: []client.Object{pv, node("a", hostLabel), node("b", hostLabel)}},
		"the PV is gone: unknown": {pod: pendingPod, pvc: boundPVC, wantReads: 1},
		"claim not bound yet: nothing read": {pod: pendingPod, pvc: &corev1.PersistentVolumeClaim{},
			objects: []client.Object{pv}},
		"Pod running: nothing read": {pod: pod(true), pvc: boundPVC, objects: []client.Object{pv}},
		"no claim: nothing read":    {pod: pendingPod, objects: []client.Object{pv}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cached, live, reads := pvReaders(t, tc.objects...)
			got, err := New(cached, live).pvNode(t.Context(), tc.pod, tc.pvc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pinned Node (-want +got):\n%s", diff)
			}
			if *reads != tc.wantReads {
				t.Errorf("%d PersistentVolume reads, want %d", *reads, tc.wantReads)
			}
		})
	}
}

// pvReaders serves objects through two clients: live counts its PersistentVolume reads in
// reads, and cached fails the test on any, since PersistentVolumes are read uncached only.
func pvReaders(t *testing.T, objects ...client.Object) (cached, live client.Client, reads *int) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objects...).Build()
	reads = new(int)
	live = interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.PersistentVolume); ok {
				*reads++
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	cached = interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.PersistentVolume); ok {
				t.Errorf("PersistentVolume %s read from the cache", key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	return cached, live, reads
}

// TestNodeReadsOff: with WithoutClusterScopedReads (the namespace-scoped install) the controller
// reads no Node and no PersistentVolume, and a terminating Pod that the taint-eviction controller
// deleted still tells that its Node is unreachable, so the classification reaches NodeLost.
func TestNodeReadsOff(t *testing.T) {
	t.Parallel()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	noReads := interceptor.NewClient(c, interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			t.Errorf("read %T %s", obj, key)
			return nil
		},
		List: func(_ context.Context, _ client.WithWatch, list client.ObjectList, _ ...client.ListOption) error {
			t.Errorf("listed %T", list)
			return nil
		},
	})
	r := New(noReads, noReads, WithoutClusterScopedReads())
	evictedAt := metav1.NewTime(healthNow.Add(-10 * time.Minute))
	deleting := func(conds ...corev1.PodCondition) *corev1.Pod {
		p := pod(false)
		p.Spec.NodeName = "n1"
		p.DeletionTimestamp = &evictedAt
		p.Status.Conditions = append(p.Status.Conditions, conds...)
		return p
	}
	evicted := deleting(corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: reasonDeletionByTaintManager, LastTransitionTime: evictedAt})
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want *health.Node
	}{
		"evicted by the taint manager: unreachable since the eviction": {pod: evicted,
			want: &health.Node{Name: "n1", Unreachable: true, NotReadySince: evictedAt.Time}},
		"deleted for another reason: unknown": {pod: deleting(corev1.PodCondition{Type: corev1.DisruptionTarget,
			Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"})},
		"deleted by hand: unknown": {pod: deleting()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := r.podNode(t.Context(), tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Node (-want +got):\n%s", diff)
			}
		})
	}
	pinned := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	if got, err := r.pvNode(t.Context(), pod(false, unschedulablePod(healthNow)), pinned); got != nil || err != nil {
		t.Errorf("pvNode = %+v, %v; want nothing read and nothing known", got, err)
	}
}
