package etcdcluster_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestRetainedClusterRecreated runs both controllers over real etcd processes: a cluster created
// with reclaimPolicy Delete is switched to Retain, deleted, and re-created under its name. The
// switch must reach the existing PVCs (before, only new PVCs got it, and the deletion took the
// data), and the new cluster must start on the data they kept, not beside it: same cluster ID,
// member names and IDs, PVCs, and the key written before (docs/design/storage.md, "Reclaim
// policy"). envtest runs no garbage collector, so the test deletes what the cluster owned, as
// the collector would.
func TestRetainedClusterRecreated(t *testing.T) {
	t.Parallel()
	f := newReadoptFixture(t, "kept")
	w := f.w
	old := w.cluster(f.name)
	before := old.DeepCopy()
	old.Spec.Storage.ReclaimPolicy = etcdv1alpha2.ReclaimPolicyRetain
	if err := k8s.Patch(t.Context(), old, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(f.ids))
	wait.Eventually(t, convergeTimeout, "every PVC kept: unowned, recording the cluster ID", func() error {
		for _, n := range names {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: desired.PVCName(n)}, pvc); err != nil {
				return err
			}
			if len(pvc.OwnerReferences) != 0 || pvc.Annotations[etcdv1alpha2.AnnotationClusterID] != old.Status.ClusterID {
				return fmt.Errorf("PVC %s: owners %+v, annotations %v: %w", pvc.Name, pvc.OwnerReferences, pvc.Annotations, errNotYet)
			}
		}
		return nil
	})
	if err := k8s.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	collectGarbage(t, w, old.UID)

	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: f.name}, Spec: old.Spec}
	if err := w.createCluster(c); err != nil {
		t.Fatal(err)
	}
	f.check(t, names...)
	if got := w.cluster(f.name).Status.ClusterID; got != old.Status.ClusterID {
		t.Errorf("status.clusterID %s, was %s", got, old.Status.ClusterID)
	}
}

// collectGarbage deletes, as Kubernetes' garbage collector would, every object of w's namespace
// controlled by owner, then everything controlled by those, and waits until the EtcdMembers are
// gone (their finalizer is released once their cluster is).
func collectGarbage(t *testing.T, w *world, owner types.UID) {
	t.Helper()
	ctx := t.Context()
	dead := map[types.UID]bool{owner: true}
	owned := func(o client.Object) bool {
		ref := metav1.GetControllerOf(o)
		return ref != nil && dead[ref.UID]
	}
	for _, list := range []client.ObjectList{&etcdv1alpha2.EtcdMemberList{}, &corev1.ServiceList{}, &policyv1.PodDisruptionBudgetList{},
		&corev1.PersistentVolumeClaimList{}, &corev1.PodList{}} {
		if err := k8s.List(ctx, list, client.InNamespace(w.ns)); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		var objs []client.Object
		for _, item := range items {
			objs = append(objs, item.(client.Object))
		}
		for _, o := range objs {
			if !owned(o) {
				continue
			}
			dead[o.GetUID()] = true
			if err := client.IgnoreNotFound(k8s.Delete(ctx, o)); err != nil {
				t.Fatalf("collecting %s: %v", o.GetName(), err)
			}
		}
	}
	wait.Eventually(t, convergeTimeout, "the old cluster's EtcdMembers gone", func() error {
		var ms etcdv1alpha2.EtcdMemberList
		if err := k8s.List(ctx, &ms, client.InNamespace(w.ns)); err != nil {
			return err
		}
		if len(ms.Items) != 0 {
			return fmt.Errorf("%d EtcdMembers left: %w", len(ms.Items), errNotYet)
		}
		return nil
	})
}
