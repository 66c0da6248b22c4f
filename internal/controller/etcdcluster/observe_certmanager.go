package etcdcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/certmanager"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;create

// observeCertManager returns the cert-manager Certificates spec.tls asks for that do not exist,
// rendered (docs/tls.md, "cert-manager"). Nothing is asked while the API server does not serve
// cert-manager's API: the cluster then waits as CertManagerNotInstalled, and the Certificates
// are created on the first pass after it does. Each is read uncached and by name, metadata
// only, like the TLS Secrets: the operator never watches Certificates (their CRD may be
// installed after the operator starts), and a deleted one is recreated on the next pass.
func (r *Reconciler) observeCertManager(ctx context.Context, c *etcdv1alpha2.EtcdCluster, t membership.TLS) ([]*unstructured.Unstructured, error) {
	if !certManagerRequested(c.Spec.TLS) || t.CertManagerMissing {
		return nil, nil
	}
	var missing []*unstructured.Unstructured
	for _, want := range certmanager.Certificates(c, r.clusterDomain) {
		have := &metav1.PartialObjectMetadata{}
		have.SetGroupVersionKind(certmanager.GroupVersionKind)
		err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(want), have)
		switch {
		case meta.IsNoMatchError(err):
			return nil, nil // cert-manager's API went since the probe looked: nothing to create
		case apierrors.IsNotFound(err):
			missing = append(missing, want)
		case err != nil:
			return nil, fmt.Errorf("reading Certificate %s: %w", want.GetName(), err)
		}
	}
	return missing, nil
}
