package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcd-operator/etcd-operator/internal/step"
)

// ensureCertManagerCertificates creates the cert-manager Certificates the pass found missing
// (docs/tls.md, "cert-manager"). A
// Certificate is created once and never patched: its spec is immutable in the cluster's spec
// (spec.tls cannot change), and a user who edits it (a longer duration, another key size) keeps
// the edit. Another writer creating it first is not an error. Neither is cert-manager's API
// having gone since the probe last looked (a create answered NotFound, or no REST mapping):
// the pass goes on without the Certificates, the cluster waits for their Secrets, and the next
// probe reports CertManagerNotInstalled.
func (x *executor) ensureCertManagerCertificates(ctx context.Context) (step.Result, error) {
	for _, want := range x.obs.certManager {
		cert := want.DeepCopy()
		err := x.client.Create(ctx, cert)
		switch {
		case apierrors.IsAlreadyExists(err):
			continue
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			logf.FromContext(ctx).Info("Not creating the cert-manager Certificates: the API server no longer serves them", "certificate", cert.GetName())
			return step.Continue, nil
		case err != nil:
			return step.Result{}, fmt.Errorf("creating Certificate %s: %w", cert.GetName(), err)
		}
		secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		// The Certificate is the related object: Events differing only in their note would be
		// folded into one series.
		x.recorder.Eventf(x.cluster(), cert, corev1.EventTypeNormal, eventCertificateCreated, eventCertificateCreated,
			"Certificate %s created; cert-manager writes Secret %s", cert.GetName(), secret)
	}
	return step.Continue, nil
}
