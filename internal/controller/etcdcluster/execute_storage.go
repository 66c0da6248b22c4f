package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// eventStorageExpanded announces that a member's PVC reports the latched size.
const eventStorageExpanded = "StorageExpanded"

// growStorage is the storage growth the plan asks for (docs/design/storage.md): it raises the
// request of every PVC the planner grows (online expansion: the volume grows under the running
// member), and writes the latched size into the spec.storage.size of every member whose volume
// reports it, announced once with StorageExpanded. The member's authorised template hash is left
// alone: when the size moves the default quota, the roll restarts the member with it, gated, one
// at a time, after its disk grew.
func (x *executor) growStorage(ctx context.Context) (step.Result, error) {
	size := x.plan.After.StorageSize
	for _, name := range x.plan.GrowPVCs {
		pvc, err := x.pvc(name)
		if err != nil {
			return step.Result{}, err
		}
		before := pvc.DeepCopy()
		if pvc.Spec.Resources.Requests == nil {
			pvc.Spec.Resources.Requests = corev1.ResourceList{}
		}
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = size.DeepCopy()
		if err := x.client.Patch(ctx, pvc, client.MergeFrom(before)); err != nil {
			return step.Result{}, fmt.Errorf("raising the storage request of PVC %s to %s: %w", name, size, err)
		}
		x.pvcs[name] = pvc.DeepCopy()
	}
	for _, name := range x.plan.RecordSize {
		m, err := x.member(name)
		if err != nil {
			return step.Result{}, err
		}
		before := m.DeepCopy()
		m.Spec.Storage.Size = ptr.To(size.DeepCopy())
		if err := x.patchMember(ctx, m, before, fmt.Sprintf("recording the expanded size %s on", size)); err != nil {
			return step.Result{}, err
		}
		capacity := x.obs.claimOf(name).Capacity
		x.memberEvent(m, corev1.EventTypeNormal, eventStorageExpanded,
			fmt.Sprintf("PVC %s of member %s reports %s (spec.storage.size %s)", desired.PVCName(name), name, capacity.String(), size.String()))
	}
	return step.Continue, nil
}
