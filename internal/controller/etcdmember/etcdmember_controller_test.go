package etcdmember

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// testScheme is the scheme of the fake clients below.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// errAPIDown is what the injected client answers for the parent EtcdCluster.
var errAPIDown = errors.New("the API server is unavailable")

// The decision wiring of the Pod step when the parent cannot be read: fail closed (no Pod, the
// error returned so the pass is retried with back-off, and Ready says why). Controller behaviour
// as a whole is proven in test/integration/etcdmember against a real API server; an unreadable
// parent cannot be produced there without also breaking the controller's cache.
func TestParentUnreadableBuildsNoPod(t *testing.T) {
	t.Parallel()
	scheme := testScheme(t)
	m := member(withID("a1", true), func(m *etcdv1alpha2.EtcdMember) {
		m.Finalizers = []string{etcdv1alpha2.FinalizerMemberCleanup}
	})
	pvc := desired.PVC(m, nil)
	base := fake.NewClientBuilder().WithScheme(scheme).WithObjects(m, pvc).
		WithStatusSubresource(&etcdv1alpha2.EtcdMember{}).Build()
	var creates []string
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*etcdv1alpha2.EtcdCluster); ok {
				return errAPIDown
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates = append(creates, obj.GetName())
			return c.Create(ctx, obj, opts...)
		},
	})
	r := New(c, c)

	_, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)})
	if !errors.Is(err, desired.ErrParentUnreadable) || !errors.Is(err, errAPIDown) {
		t.Errorf("Reconcile error = %v, want it to wrap %v and %v", err, desired.ErrParentUnreadable, errAPIDown)
	}
	if len(creates) != 0 {
		t.Errorf("created %v while the parent was unreadable", creates)
	}
	if err := base.Get(t.Context(), client.ObjectKeyFromObject(m), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("Pod lookup: %v, want NotFound", err)
	}
	got := &etcdv1alpha2.EtcdMember{}
	if err := base.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	if ready := readyConditionOf(got); ready == nil || ready.Reason != ReasonPodNotReady || ready.Message != "no pod: the parent EtcdCluster could not be read, so the initial cluster state is unknown" {
		t.Errorf("Ready = %+v, want PodNotReady naming the unreadable parent", ready)
	}
}

// A Pod named like the member that the cache does not show (a label-filtered cache, say) makes
// the create fail with AlreadyExists. The live object decides: a foreign one is refused like any
// other, once, with no retry loop.
func TestNameTakenByAHiddenForeignPod(t *testing.T) {
	t.Parallel()
	scheme := testScheme(t)
	m := member(withID("a1", true), func(m *etcdv1alpha2.EtcdMember) {
		m.Finalizers = []string{etcdv1alpha2.FinalizerMemberCleanup}
	})
	parent := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testCluster, UID: testClusterUID}}
	parent.Status.ClusterID = "c1"
	pvc := desired.PVC(m, nil)
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(m, pvc, parent).
		WithStatusSubresource(&etcdv1alpha2.EtcdMember{}).Build()
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testMember, UID: "squatter"}}
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(foreign).Build()
	c := interceptor.NewClient(cached, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				return apierrors.NewAlreadyExists(corev1.Resource("pods"), obj.GetName())
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	rec := events.NewFakeRecorder(10)
	r := New(c, live, WithRecorder(rec))

	res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)})
	if err != nil || res.RequeueAfter != 0 {
		t.Errorf("Reconcile = %+v, %v; want no error and no requeue (a person must act)", res, err)
	}
	got := &etcdv1alpha2.EtcdMember{}
	if err := cached.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	if ready := readyConditionOf(got); ready == nil || ready.Message != podConflict(foreign, m) {
		t.Errorf("Ready = %+v, want the conflict reported", ready)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, EventOwnershipConflict) {
			t.Errorf("event %q, want %s", e, EventOwnershipConflict)
		}
	default:
		t.Errorf("no %s Event", EventOwnershipConflict)
	}
}
