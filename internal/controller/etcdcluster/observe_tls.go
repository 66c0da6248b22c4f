package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// errNoProbe is returned for a cluster asking for cert-manager when the Reconciler was built
// without a probe.
var errNoProbe = errors.New("no cert-manager probe configured")

// certManagerRequested reports whether spec.tls asks cert-manager for any certificate.
func certManagerRequested(t *etcdv1alpha2.EtcdClusterTLS) bool {
	return t != nil && ((t.Client != nil && t.Client.CertManager != nil) || (t.Peer != nil && t.Peer.CertManager != nil))
}

// tlsSecretNames are the Secrets spec.tls refers to, the operator's client Secret included,
// sorted: the ones the user names, and the ones cert-manager is to issue (docs/api.md, "Objects and their names").
func tlsSecretNames(c *etcdv1alpha2.EtcdCluster) []string {
	var out []string
	if m := memberTLS(c); m != nil {
		if m.ClientServerSecretRef != nil {
			out = append(out, m.ClientServerSecretRef.Name)
		}
		if m.PeerSecretRef != nil {
			out = append(out, m.PeerSecretRef.Name)
		}
	}
	if t := c.Spec.TLS; t != nil && t.Client != nil {
		switch {
		case t.Client.OperatorClientSecretRef != nil:
			out = append(out, t.Client.OperatorClientSecretRef.Name)
		case t.Client.CertManager != nil && t.Client.CertManager.OperatorClientIssuerRef != nil:
			out = append(out, c.Name+"-operator-client-tls")
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// observeTLS finds which of the TLS material spec.tls asks for is missing (docs/design/membership-flows.md, "Bootstrap"):
// cert-manager's API, and the Secrets, read uncached and by name. It also returns the digests
// of the Secrets' CA bundles, which enter members' template hashes (docs/tls.md, "Rotation").
func (r *Reconciler) observeTLS(ctx context.Context, c *etcdv1alpha2.EtcdCluster) (membership.TLS, map[string]string, error) {
	var t membership.TLS
	if c.Spec.TLS == nil {
		return t, nil, nil
	}
	if certManagerRequested(c.Spec.TLS) {
		if r.certManager == nil {
			return t, nil, errNoProbe
		}
		installed, err := r.certManager.CertManagerInstalled()
		if err != nil {
			return t, nil, err
		}
		t.CertManagerMissing = !installed
	}
	bundles := map[string]string{}
	for _, name := range tlsSecretNames(c) {
		s := &corev1.Secret{}
		err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, s)
		switch {
		case apierrors.IsNotFound(err):
			t.MissingSecrets = append(t.MissingSecrets, name)
		case err != nil:
			return t, nil, fmt.Errorf("reading TLS Secret %s: %w", name, err)
		default:
			bundles[name] = desired.CADigest(s.Data[desired.CACertKey])
		}
	}
	return t, bundles, nil
}
