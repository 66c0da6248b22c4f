package adopt

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// cutOver is step 7: the legacy client Service <c> goes and the operator's headless Service
// <c> takes its name; from the delete to the create, <c>:2379 does not resolve.
func (a *Adopter) cutOver(ctx context.Context, c *etcdv1alpha2.EtcdCluster) error {
	headless, _ := desired.Services(c)
	svc := &corev1.Service{}
	err := a.Kube.Get(ctx, client.ObjectKeyFromObject(headless), svc)
	switch {
	case err == nil && ControlledBy(svc, c.UID):
		return nil
	case err == nil && IsLegacyService(svc, c.Name):
		if svc.DeletionTimestamp == nil {
			if err := a.Kube.Delete(ctx, svc); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting the legacy client Service %s: %w", svc.Name, err)
			}
			a.logf("deleted the legacy client Service %s/%s", svc.Namespace, svc.Name)
		}
		if err := a.waitGone(ctx, svc, orDuration(a.ServiceGone, time.Minute)); err != nil {
			return err
		}
	case err == nil:
		return fmt.Errorf("a Service %s exists that is neither the legacy client Service nor the cluster's; remove it, then re-run", svc.Name)
	case !apierrors.IsNotFound(err):
		return err
	}
	if err := a.Kube.Create(ctx, headless); err != nil {
		return fmt.Errorf("creating the headless Service %s: %w", headless.Name, err)
	}
	a.logf("created the headless Service %s/%s", headless.Namespace, headless.Name)
	return nil
}

// handOver is step 8: adoption-in-progress comes off the members, then off the cluster; the
// operator takes over at the last write.
func (a *Adopter) handOver(ctx context.Context, c *etcdv1alpha2.EtcdCluster, members []etcdv1alpha2.EtcdMember) error {
	for i := range members {
		if err := a.dropInProgress(ctx, &members[i]); err != nil {
			return err
		}
	}
	return a.dropInProgress(ctx, c)
}

func (a *Adopter) dropInProgress(ctx context.Context, obj client.Object) error {
	if _, ok := obj.GetAnnotations()[etcdv1alpha2.AnnotationAdoptionInProgress]; !ok {
		return nil
	}
	patch := client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+etcdv1alpha2.AnnotationAdoptionInProgress+`":null}}}`))
	if err := a.Kube.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("removing adoption-in-progress from %T %s: %w", obj, obj.GetName(), err)
	}
	a.logf("removed adoption-in-progress from %T %s", obj, obj.GetName())
	return nil
}
