package etcdcluster_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// countingClient wraps the real API client and counts writes.
func countingClient(t *testing.T, writes *atomic.Int64) client.Client {
	t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	count := func() { writes.Add(1) }
	return interceptor.NewClient(wc, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, o, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, o, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			count()
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
}

// TestIdlePassWritesNothing reconciles a converged cluster again and again: 0 API writes, 0 etcd
// mutations, and the pooled etcd client is reused rather than re-dialled.
func TestIdlePassWritesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newCluster("idle", 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("idle", 3))

	var writes atomic.Int64
	c := countingClient(t, &writes)
	r := etcdcluster.New(c, c, &events.FakeRecorder{}, w.pool, etcdcluster.WithResyncJitter(noJitter))
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: w.ns, Name: "idle"}}
	// The first pass of a new reconciler may still see the running controller's last step land;
	// from then on, passes over an unchanged world must write nothing.
	wait.Eventually(t, convergeTimeout, "a quiet pass", func() error {
		writes.Store(0)
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			return err
		}
		if n := writes.Load(); n != 0 {
			return fmt.Errorf("%d writes", n)
		}
		return nil
	})
	mutations := len(w.fake("idle").Mutations())
	dials := w.pool.Dials()
	for i := range 5 {
		res, err := r.Reconcile(t.Context(), req)
		if err != nil {
			t.Fatalf("pass %d: %v", i, err)
		}
		if res.RequeueAfter != 30_000_000_000 {
			t.Errorf("pass %d requeues after %s, want the 30 s resync", i, res.RequeueAfter)
		}
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("5 idle passes made %d API writes", n)
	}
	if got := w.fake("idle").Mutations(); len(got) != mutations {
		t.Errorf("idle passes made etcd mutations: %v", got[mutations:])
	}
	if d := w.pool.Dials(); d != dials {
		t.Errorf("idle passes dialled etcd %d more times", d-dials)
	}
}

// TestClusterDeletion deletes a cluster: the controller forgets its etcd client, and everything
// it created is owned by the cluster, so the garbage collector removes it (envtest runs none).
func TestClusterDeletion(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	c := w.newCluster("del", 1)
	wait.Eventually(t, convergeTimeout, "1 member", w.converged("del", 1))
	ms, _ := w.members(t.Context(), "del")
	for _, m := range ms {
		if ref := ownerUID(m.OwnerReferences); ref != string(c.UID) {
			t.Errorf("member %s is not owned by the cluster", m.Name)
		}
	}
	if err := k8s.Delete(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "etcd client closed", func() error {
		if n := w.pool.Len(); n != 0 {
			return fmt.Errorf("%d pooled clients", n)
		}
		return nil
	})
	before := len(w.fake("del").Mutations())
	var list etcdv1alpha2.EtcdMemberList
	if err := k8s.List(t.Context(), &list, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	if got := len(w.fake("del").Mutations()); got != before {
		t.Errorf("etcd mutations after the cluster was deleted: %v", w.fake("del").Mutations()[before:])
	}
}

func ownerUID(refs []metav1.OwnerReference) string {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return string(r.UID)
		}
	}
	return ""
}

// TestAdoptionInProgressIsLeftAlone: a cluster etcd-migrate is adopting gets no write at all.
func TestAdoptionInProgressIsLeftAlone(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "adopt",
			Annotations: map[string]string{etcdv1alpha2.AnnotationAdoptionInProgress: "true"}},
		Spec: etcdv1alpha2.EtcdClusterSpec{Version: "3.6.5"},
	}
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	cl := countingClient(t, &writes)
	r := etcdcluster.New(cl, cl, &events.FakeRecorder{}, w.pool)
	res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)})
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile = %+v, %v", res, err)
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("%d writes to a cluster under adoption", n)
	}
}
