package etcdcluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// readoptSteps are the failpoints of re-adoption; TestCrashConsistency runs crashReadopt for them.
var readoptSteps = []string{failpoint.MemberReadopted, failpoint.ReadoptedMemberIDSet, failpoint.PVCReadopted}

// crashReadopt crashes the reconciler at step while, on a converged cluster of 3, first one
// EtcdMember and then all of them are force-deleted: each time every member must come back
// under its name with its etcd member ID and its PVC, with no member added to or removed from
// etcd. readopted-member-id-set is reached only while etcd answers, which in the total-loss phase
// depends on how soon the first Pods run: it is required in the first phase only.
func crashReadopt(t *testing.T, w *world, d *crashDriver, name, step string) {
	t.Helper()
	ids := memberIDs(t, w, name)
	done := len(w.fake(name).Mutations())
	names := slices.Sorted(maps.Keys(ids))

	forceDelete(t, w, names[1])
	d.until("one force-deleted member re-adopted", w.readopted(name, ids))
	if !d.reached[step] {
		t.Errorf("failpoint %s was never reached re-adopting one member", step)
	}

	delete(d.reached, step)
	d.arm(step)
	forceDelete(t, w, names...)
	d.until("all force-deleted members re-adopted", w.readopted(name, ids))
	if !d.reached[step] && step != failpoint.ReadoptedMemberIDSet {
		t.Errorf("failpoint %s was never reached re-adopting every member", step)
	}
	for _, c := range w.fake(name).Mutations()[done:] {
		if c.Method == etcdfake.MemberAddAsLearner || c.Method == etcdfake.MemberRemove {
			t.Errorf("re-adoption changed etcd's membership: %v", w.fake(name).Mutations()[done:])
			break
		}
	}
}

// memberIDs returns the etcd member ID of each EtcdMember of cluster, by name.
func memberIDs(t *testing.T, w *world, cluster string) map[string]string {
	t.Helper()
	ms, err := w.members(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range ms {
		if m.Status.MemberID == "" {
			t.Fatalf("member %s has no memberID", m.Name)
		}
		out[m.Name] = m.Status.MemberID
	}
	return out
}

// forceDelete deletes EtcdMembers the way a mistaken deletion that bypassed the guard does:
// kubectl delete, then the member-cleanup finalizer stripped by hand.
func forceDelete(t *testing.T, w *world, names ...string) {
	t.Helper()
	ctx := t.Context()
	for _, n := range names {
		m := &etcdv1alpha2.EtcdMember{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: n}, m); err != nil {
			t.Fatalf("reading EtcdMember %s: %v", n, err)
		}
		if err := k8s.Delete(ctx, m, client.Preconditions{UID: &m.UID}); err != nil {
			t.Fatalf("deleting EtcdMember %s: %v", n, err)
		}
		// A merge patch without resourceVersion: the member controller writes the member too.
		before := m.DeepCopy()
		if controllerutil.RemoveFinalizer(m, etcdv1alpha2.FinalizerMemberCleanup) {
			if err := k8s.Patch(ctx, m, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("stripping the finalizer of EtcdMember %s: %v", n, err)
			}
		}
	}
	// Gone, or already back under a new UID.
	wait.Eventually(t, convergeTimeout, "force-deleted members gone", func() error {
		for _, n := range names {
			m := &etcdv1alpha2.EtcdMember{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: n}, m); err == nil && m.DeletionTimestamp != nil {
				return fmt.Errorf("%s is still being deleted: %w", n, errNotYet)
			}
		}
		return nil
	})
}

// readopted checks that cluster converged with exactly the members of ids, each under its name
// with its old etcd member ID, each owning its PVC (member-uid).
func (w *world) readopted(cluster string, ids map[string]string) func() error {
	return func() error {
		if err := w.converged(cluster, len(ids))(); err != nil {
			return err
		}
		ms, err := w.members(context.Background(), cluster)
		if err != nil {
			return err
		}
		if len(ms) != len(ids) {
			return fmt.Errorf("%d members, want %d", len(ms), len(ids))
		}
		for _, m := range ms {
			if want, ok := ids[m.Name]; !ok || m.Status.MemberID != want {
				return fmt.Errorf("member %s has memberID %s, want %q", m.Name, m.Status.MemberID, want)
			}
			pvc := &corev1.PersistentVolumeClaim{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: desired.PVCName(m.Name)}, pvc); err != nil {
				return err
			}
			if got := pvc.Annotations[etcdv1alpha2.AnnotationMemberUID]; got != string(m.UID) {
				return fmt.Errorf("PVC %s names member UID %s, the member is %s: %w", pvc.Name, got, m.UID, errNotYet)
			}
		}
		return nil
	}
}
