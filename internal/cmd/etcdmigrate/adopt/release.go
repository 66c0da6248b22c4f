package adopt

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// headlessOwners is step 3: the legacy headless Service is handed to the adopted members.
// Gone already means collected after the members were replaced: done.
func (a *Adopter) headlessOwners(ctx context.Context, members []etcdv1alpha2.EtcdMember) error {
	name := members[0].Annotations[etcdv1alpha2.AnnotationHeadlessServiceName]
	svc := &corev1.Service{}
	if err := a.Kube.Get(ctx, client.ObjectKey{Namespace: members[0].Namespace, Name: name}, svc); err != nil {
		return client.IgnoreNotFound(err)
	}
	want := HeadlessOwners(members)
	if equality.Semantic.DeepEqual(svc.OwnerReferences, want) {
		return nil
	}
	patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	svc.OwnerReferences = want
	if err := a.Kube.Patch(ctx, svc, patch); err != nil {
		return fmt.Errorf("patching the ownerReferences of Service %s: %w", name, err)
	}
	a.logf("handed Service %s to the adopted members", name)
	return nil
}

// releaseLegacy is step 4: the legacy EtcdCluster and the StatefulSet are deleted with orphan
// propagation (their Pods, PVCs and Services stay), and the StatefulSet is waited for.
func (a *Adopter) releaseLegacy(ctx context.Context, c *etcdv1alpha2.EtcdCluster) error {
	lc := &unstructured.Unstructured{}
	lc.SetGroupVersionKind(legacy.EtcdClusterGVK)
	if err := a.orphanDelete(ctx, c.Namespace, c.Name, lc, "legacy EtcdCluster"); err != nil {
		return err
	}
	sts := &appsv1.StatefulSet{}
	if err := a.orphanDelete(ctx, c.Namespace, legacy.StatefulSetName(c.Name), sts, "StatefulSet"); err != nil {
		return err
	}
	sts.SetName(legacy.StatefulSetName(c.Name))
	sts.SetNamespace(c.Namespace)
	return a.waitGone(ctx, sts, orDuration(a.StatefulSetGone, 2*time.Minute))
}

// orphanDelete deletes obj with orphan propagation unless it is gone or being deleted already.
func (a *Adopter) orphanDelete(ctx context.Context, ns, name string, obj client.Object, what string) error {
	err := a.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return err
	case obj.GetDeletionTimestamp() != nil:
		return nil
	}
	orphan := metav1.DeletePropagationOrphan
	if err := a.Kube.Delete(ctx, obj, &client.DeleteOptions{PropagationPolicy: &orphan}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("orphan-deleting %s %s: %w", what, name, err)
	}
	a.logf("orphan-deleted %s %s/%s", what, ns, name)
	return nil
}

// deleteLegacyState is step 5: the legacy state ConfigMap and PDB go; a PDB <c> that the
// cluster controls is the operator's own, after the hand-over, and stays.
func (a *Adopter) deleteLegacyState(ctx context.Context, c *etcdv1alpha2.EtcdCluster) error {
	cm := &corev1.ConfigMap{}
	if err := a.deleteUnlessOwned(ctx, c, legacy.StateConfigMapName(c.Name), cm, "ConfigMap"); err != nil {
		return err
	}
	return a.deleteUnlessOwned(ctx, c, legacy.PDBName(c.Name), &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget")
}

func (a *Adopter) deleteUnlessOwned(ctx context.Context, c *etcdv1alpha2.EtcdCluster, name string, obj client.Object, what string) error {
	err := a.Kube.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case ControlledBy(obj, c.UID) || obj.GetDeletionTimestamp() != nil:
		return nil
	}
	if err := a.Kube.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s: %w", what, name, err)
	}
	a.logf("deleted %s %s/%s", what, c.Namespace, name)
	return nil
}
