package legacyfixture

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// crdEstablishTimeout bounds the wait for a new CRD to be served.
const crdEstablishTimeout = time.Minute

// Apply creates s through c, as the legacy operator and its user would have: the CRDs (left as
// they are when they exist), the user's Secrets and legacy EtcdCluster (with the status the
// legacy operator writes), then the objects the legacy operator owns, with the EtcdCluster's
// real UID in their ownerReferences. c's scheme must know apiextensions/v1.
func (s *Set) Apply(ctx context.Context, c client.Client) error {
	for _, crd := range s.CRDs {
		if err := createCRD(ctx, c, crd.DeepCopy()); err != nil {
			return err
		}
	}
	for _, sec := range s.Secrets {
		if err := c.Create(ctx, sec.DeepCopy()); err != nil {
			return fmt.Errorf("creating Secret %s: %w", sec.Name, err)
		}
	}
	uid, err := s.createCluster(ctx, c)
	if err != nil {
		return err
	}
	s.Options.UID, s.Cluster.UID = uid, uid
	for _, obj := range s.owned() {
		obj.SetOwnerReferences([]metav1.OwnerReference{ownerRef(s.Options)})
		co, ok := obj.(client.Object)
		if !ok {
			return fmt.Errorf("legacy fixture: %T is not a client.Object", obj)
		}
		if err := c.Create(ctx, co.DeepCopyObject().(client.Object)); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

func (s *Set) createCluster(ctx context.Context, c client.Client) (uid types.UID, err error) {
	u, err := legacy.ToUnstructured(s.Cluster)
	if err != nil {
		return "", err
	}
	u.SetUID("")
	status := u.Object["status"]
	if err := c.Create(ctx, u); err != nil {
		return "", fmt.Errorf("creating legacy EtcdCluster %s: %w", s.Cluster.Name, err)
	}
	u.Object["status"] = status
	if err := c.Status().Update(ctx, u); err != nil {
		return "", fmt.Errorf("writing legacy EtcdCluster %s status: %w", s.Cluster.Name, err)
	}
	return u.GetUID(), nil
}

func createCRD(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established: %w", crd.Name, err)
	}
	return nil
}
