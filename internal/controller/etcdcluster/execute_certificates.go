package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/etcd-operator/etcd-operator/internal/step"
)

// eventCertificateCreated records the creation of a cert-manager Certificate.
const eventCertificateCreated = "CertificateCreated"

// ensureCertificates creates the cert-manager Certificates the pass found missing. A
// Certificate is created once and never patched: its spec is immutable in the cluster's spec
// (spec.tls cannot change), and a user who edits it (a longer duration, another key size) keeps
// the edit. Another writer creating it first is not an error.
func (x *executor) ensureCertificates(ctx context.Context) (step.Result, error) {
	for _, want := range x.obs.certificates {
		cert := want.DeepCopy()
		err := x.client.Create(ctx, cert)
		switch {
		case apierrors.IsAlreadyExists(err):
			continue
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
