package etcdcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// deletePVC deletes the data PVC of a member gone from Kubernetes and etcd. The cache of PVCs and
// the cache of EtcdMembers are separate informers, so an uncached read first confirms the member
// is really gone: a PVC of a member created a moment ago must never be taken for an orphan.
func (x *executor) deletePVC(ctx context.Context, a membership.Action) (step.Result, error) {
	pvc, err := x.pvc(a.PVC)
	if err != nil {
		return step.Result{}, err
	}
	err = x.apiReader.Get(ctx, client.ObjectKey{Namespace: x.cluster().Namespace, Name: a.Member}, &etcdv1alpha2.EtcdMember{})
	switch {
	case err == nil:
		return step.Requeue(nextStepDelay, "EtcdMember "+a.Member+" still exists"), nil
	case !apierrors.IsNotFound(err):
		return step.Result{}, fmt.Errorf("confirming EtcdMember %s is gone: %w", a.Member, err)
	}
	if err := x.client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); err != nil && !apierrors.IsNotFound(err) {
		return step.Result{}, fmt.Errorf("deleting PVC %s: %w", pvc.Name, err)
	}
	failpoint.Inject(ctx, failpoint.PVCDeleted)
	return step.Continue, nil
}
