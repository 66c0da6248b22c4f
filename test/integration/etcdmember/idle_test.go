package etcdmember_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

func TestIdlePassWritesNothing(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c, func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "a"}}
	})
	markPodRunning(t, waitPod(t, m), "10.0.3.1", true)
	setMemberStatus(t, m, "a1", true)
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionTrue, etcdmember.ReasonPodReady)
	wait.Eventually(t, convergeTimeout, "role label in place", func(ctx context.Context) error {
		p, err := getPod(ctx, m)
		if err != nil {
			return err
		}
		if p.Labels[etcdv1alpha2.LabelRole] != etcdv1alpha2.RoleVoter {
			return errors.New("no role label yet")
		}
		return nil
	})

	// The running controller is quiet: no object it writes changes any more.
	requireQuiet(t, m)

	// A second reconciler over the same, converged world, with every write counted.
	var writes atomic.Int64
	var written []string
	count := func(what string, obj any) {
		writes.Add(1)
		written = append(written, fmt.Sprintf("%s %T", what, obj))
	}
	base, counting := countingClient(t, count)
	// Configured as the suite's running controller is: the guard image is part of the hash.
	r := etcdmember.New(counting, base, etcdmember.WithEtcdClients(etcd), etcdmember.WithImageRepository(imageRepository), etcdmember.WithGuardImage(guardImage))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}
	for pass := 1; pass <= 2; pass++ {
		res, err := r.Reconcile(t.Context(), req)
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if res.RequeueAfter != 0 {
			t.Errorf("pass %d asked for a requeue after %v on an idle member", pass, res.RequeueAfter)
		}
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("two idle passes made %d API writes: %v", n, written)
	}
	if n := etcd.getsOf(ns, c.Name); n != 0 {
		t.Errorf("idle passes asked for an etcd client %d times", n)
	}
}

// objectVersions are the resourceVersions of member m, its Pod and its PVC, joined.
func objectVersions(ctx context.Context, m *etcdv1alpha2.EtcdMember) (string, error) {
	cur, err := getMember(ctx, m)
	if err != nil {
		return "", err
	}
	p, err := getPod(ctx, m)
	if err != nil {
		return "", err
	}
	v, err := getPVC(ctx, m)
	if err != nil {
		return "", err
	}
	return cur.ResourceVersion + "/" + p.ResourceVersion + "/" + v.ResourceVersion, nil
}

// countingClient returns an uncached client and the same client with count called before every
// write it sends.
func countingClient(t *testing.T, count func(what string, obj any)) (client.WithWatch, client.Client) {
	t.Helper()
	base, err := client.NewWithWatch(restConfig, client.Options{Scheme: k8sClient.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return base, interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			count("patch", obj)
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			count("update "+sub, obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count("apply", obj)
			return c.Apply(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			count("patch "+sub, obj)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
}

// requireQuiet checks, for steadyWindow, that nothing writes member m, its Pod or its PVC.
func requireQuiet(t *testing.T, m *etcdv1alpha2.EtcdMember) {
	t.Helper()
	before, err := objectVersions(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	wait.Consistently(t, steadyWindow, "resourceVersions stay put", func(ctx context.Context) error {
		now, err := objectVersions(ctx, m)
		if err != nil {
			return err
		}
		if now != before {
			return fmt.Errorf("member/Pod/PVC resourceVersions went from %s to %s", before, now)
		}
		return nil
	})
}
