package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// eventStorageExpanded announces that a member's PVC reports the latched size (behaviour.md §23).
const eventStorageExpanded = "StorageExpanded"

// Annotations that mark the default StorageClass: the GA one and the beta one the API server
// still honours.
const (
	annotationDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annotationBetaDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// storageClasses is what a pass knows of StorageClasses: read only when some member PVC is
// smaller than the latched size, so an idle cluster never reads (nor watches) them.
type storageClasses struct {
	byName map[string]*storagev1.StorageClass
	// defaultName is the default class, the newest when several claim it (as the API
	// server's DefaultStorageClass admission picks it); empty without one.
	defaultName string
}

// latchedSize is the latched spec.storage.size of a PVC cluster (the API default when unset),
// nil for a Memory cluster or before anything is latched.
func (p *pass) latchedSize() *resource.Quantity {
	o := p.cluster.Status.Observed
	if o == nil || o.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		return nil
	}
	q := desired.StorageSize(o.Storage)
	return &q
}

// observeStorageClasses reads the StorageClasses when some PVC is smaller than the latched size:
// whether its class allows expansion decides between growing it and reporting that it cannot.
func (p *pass) observeStorageClasses(ctx context.Context) error {
	size := p.latchedSize()
	if size == nil {
		return nil
	}
	needed := false
	for i := range p.pvcs {
		if c := p.claimFrom(&p.pvcs[i]); !c.Holds(*size) {
			needed = true
			break
		}
	}
	if !needed {
		return nil
	}
	var list storagev1.StorageClassList
	if err := p.r.client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing StorageClasses: %w", err)
	}
	sc := &storageClasses{byName: map[string]*storagev1.StorageClass{}}
	var newest *storagev1.StorageClass
	for i := range list.Items {
		c := &list.Items[i]
		sc.byName[c.Name] = c
		if c.Annotations[annotationDefaultClass] != "true" && c.Annotations[annotationBetaDefaultClass] != "true" {
			continue
		}
		if newest == nil || c.CreationTimestamp.After(newest.CreationTimestamp.Time) ||
			(c.CreationTimestamp.Equal(&newest.CreationTimestamp) && c.Name < newest.Name) {
			newest = c
		}
	}
	if newest != nil {
		sc.defaultName = newest.Name
	}
	p.classes = sc
	return nil
}

// claimFrom projects a PVC for the storage planner. The class that decides whether it can grow
// is the one the API server's resize admission checks: the PVC's own storageClassName (set from
// the default class when the PVC was created), else the cluster's, else today's default.
func (p *pass) claimFrom(pvc *corev1.PersistentVolumeClaim) membership.Claim {
	c := membership.Claim{
		Request:                 pvc.Spec.Resources.Requests[corev1.ResourceStorage],
		Capacity:                pvc.Status.Capacity[corev1.ResourceStorage],
		Bound:                   pvc.Status.Phase == corev1.ClaimBound,
		FileSystemResizePending: pvcCondition(pvc, corev1.PersistentVolumeClaimFileSystemResizePending),
	}
	switch {
	case pvc.Spec.StorageClassName != nil:
		c.Class = *pvc.Spec.StorageClassName
	case p.cluster.Spec.Storage.StorageClassName != nil:
		c.Class = *p.cluster.Spec.Storage.StorageClassName
	case p.classes != nil:
		c.Class = p.classes.defaultName
	}
	if p.classes != nil && c.Class != "" {
		if class, ok := p.classes.byName[c.Class]; ok {
			c.ClassFound = true
			c.Expandable = class.AllowVolumeExpansion != nil && *class.AllowVolumeExpansion
		}
	}
	return c
}

func pvcCondition(pvc *corev1.PersistentVolumeClaim, t corev1.PersistentVolumeClaimConditionType) bool {
	for _, c := range pvc.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// claimOf returns the storage view of member name's data PVC, nil without one.
func (p *pass) claimOf(member string) *membership.Claim {
	for i := range p.pvcs {
		if pvc := &p.pvcs[i]; pvc.Name == desired.PVCName(member) && pvc.DeletionTimestamp.IsZero() {
			c := p.claimFrom(pvc)
			return &c
		}
	}
	return nil
}

// memberTarget is the latched target member m's template is judged against and written from:
// status.observed, with the storage size its PVC provides so far (membership.MemberTarget).
func (p *pass) memberTarget(m *etcdv1alpha2.EtcdMember) *etcdv1alpha2.ObservedClusterSpec {
	return membership.MemberTarget(p.cluster.Status.Observed, m.Spec.Storage.Size, p.claimOf(m.Name))
}

// expandStorage is the non-disruptive storage step (behaviour.md §13): it raises the request
// of every PVC the planner grows (online expansion: the volume grows under the running member),
// and once a PVC's volume reports the latched size, writes that size into its member's
// spec.storage.size, announced once with StorageExpanded. The member's authorised template
// hash is left alone: when the size moves the default quota, the rolling update restarts the
// member with it, gated, one at a time, after its disk grew.
func (p *pass) expandStorage(ctx context.Context) (ctrl.Result, error) {
	size := p.latchedSize()
	if size == nil {
		return ctrl.Result{}, nil
	}
	s := p.scope()
	plan := membership.PlanStorage(&s)
	for _, name := range plan.Grow {
		pvc, err := p.pvc(name)
		if err != nil {
			return ctrl.Result{}, err
		}
		before := pvc.DeepCopy()
		if pvc.Spec.Resources.Requests == nil {
			pvc.Spec.Resources.Requests = corev1.ResourceList{}
		}
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = size.DeepCopy()
		if err := p.r.client.Patch(ctx, pvc, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("raising the storage request of PVC %s to %s: %w", name, size, err)
		}
	}
	for i := range p.members {
		m := &p.members[i]
		c := p.claimOf(m.Name)
		if !m.DeletionTimestamp.IsZero() || c == nil || !c.Grown(*size) ||
			(m.Spec.Storage.Size != nil && m.Spec.Storage.Size.Cmp(*size) >= 0) {
			continue
		}
		before := m.DeepCopy()
		m.Spec.Storage.Size = ptr.To(size.DeepCopy())
		if err := p.r.client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("recording the expanded size %s on EtcdMember %s: %w", size, m.Name, err)
		}
		p.memberEvent(m, corev1.EventTypeNormal, eventStorageExpanded,
			fmt.Sprintf("PVC %s of member %s reports %s (spec.storage.size %s)", desired.PVCName(m.Name), m.Name, c.Capacity.String(), size.String()))
	}
	return ctrl.Result{}, nil
}
