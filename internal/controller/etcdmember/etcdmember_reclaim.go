package etcdmember

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// keepReclaimPolicy applies the cluster's storage.reclaimPolicy to the member's existing data
// PVC on every pass, both ways (docs/design/storage.md, "Reclaim policy"): under Delete the PVC
// is owned by the EtcdCluster, so the garbage collector deletes it with the cluster; under
// Retain it is owned by nothing and outlives the cluster. Once the cluster ID is latched, the
// PVC records it (annotation cluster-id), which is how a cluster re-created under the same name
// knows the retained data is its own. Only a present parent decides: while the cluster is being
// deleted the garbage collector acts on the references as they are, and a parent that is gone
// or unreadable is no authority.
func (r *Reconciler) keepReclaimPolicy(ctx context.Context, sc *scope) error {
	if sc.parentState != parentPresent {
		return nil
	}
	pvc := sc.pvc
	refs := desired.PVCOwnerReferences(pvc.OwnerReferences, sc.parent)
	clusterID := sc.parent.Status.ClusterID
	stamp := clusterID != "" && pvc.Annotations[etcdv1alpha2.AnnotationClusterID] == ""
	if equality.Semantic.DeepEqual(refs, pvc.OwnerReferences) && !stamp {
		return nil
	}
	before := pvc.DeepCopy()
	pvc.OwnerReferences = refs
	if stamp {
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[etcdv1alpha2.AnnotationClusterID] = clusterID
	}
	// Optimistic lock: ownerReferences is one list in a merge patch, and another controller's
	// reference added since the read must not be dropped.
	if err := r.client.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("applying reclaimPolicy %s to PVC %s: %w", reclaimPolicy(sc.parent), pvc.Name, err)
	}
	logf.FromContext(ctx).Info("Applied the reclaim policy to the data PVC", "pvc", pvc.Name,
		"reclaimPolicy", reclaimPolicy(sc.parent), "ownerReferences", len(refs), "clusterID", pvc.Annotations[etcdv1alpha2.AnnotationClusterID])
	return nil
}

// reclaimPolicy is c's storage.reclaimPolicy, with the API default for unset.
func reclaimPolicy(c *etcdv1alpha2.EtcdCluster) etcdv1alpha2.ReclaimPolicy {
	if p := c.Spec.Storage.ReclaimPolicy; p != "" {
		return p
	}
	return etcdv1alpha2.ReclaimPolicyDelete
}
