package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/pki"
)

// errNoProbe is returned for a cluster asking for cert-manager when the Reconciler was built
// without a probe.
var errNoProbe = errors.New("no cert-manager probe configured")

// certManagerRequested reports whether spec.tls asks cert-manager for any certificate.
func certManagerRequested(t *etcdv1alpha2.EtcdClusterTLS) bool {
	return t != nil && ((t.Client != nil && t.Client.CertManager != nil) || (t.Peer != nil && t.Peer.CertManager != nil))
}

// tlsSecretNames are the Secrets spec.tls refers to, the operator's client Secret included,
// sorted: the ones the user names, and the ones cert-manager or the operator is to issue
// (docs/api.md, "Objects and their names").
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
	if managedTLS(c) {
		out = append(out, operatorClientSecretName(c.Name))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// certificates is what a pass read of the cluster's certificates, beyond what membership.TLS
// tells the planner.
type certificates struct {
	// expiring are the user's certificates that expire within pki.ExpiryWarning, each announced
	// by a Warning Event (execute_certificates.go).
	expiring []pki.Problem
	// managed is the plan over the managed Secrets; nil unless spec.tls.managed.
	managed *pki.Plan
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// observeTLS reads the TLS material spec.tls asks for (docs/design/membership-flows.md,
// "Bootstrap"; docs/tls.md) into o: cert-manager's API, which Secrets are missing, what is wrong
// with the certificates of those that exist, the digests of their CA bundles, which enter
// members' template hashes (docs/tls.md, "Rotation"), and under spec.tls.managed which Secrets to
// issue. Secrets are read uncached and by name: their metadata on every pass, their data only
// when their resourceVersion changed (tlsCache).
func (r *Reconciler) observeTLS(ctx context.Context, o *observation) error {
	c := o.cluster
	if c.Spec.TLS == nil {
		return nil
	}
	if certManagerRequested(c.Spec.TLS) {
		if r.certManager == nil {
			return errNoProbe
		}
		installed, err := r.certManager.CertManagerInstalled()
		if err != nil {
			return err
		}
		o.tls.CertManagerMissing = !installed
	}
	if managedTLS(c) {
		return r.observeManaged(ctx, o)
	}
	o.caBundles = map[string]string{}
	materials := map[string]*pki.Material{}
	for _, name := range tlsSecretNames(c) {
		read, err := r.readSecret(ctx, c, name)
		switch {
		case err != nil:
			return err
		case read == nil:
			o.tls.MissingSecrets = append(o.tls.MissingSecrets, name)
		default:
			materials[name], o.caBundles[name] = read.material, read.caDigest
		}
	}
	problems := pki.Check(byoExpectations(c), materials, o.now)
	o.tls.Certificates = certificateProblems(problems)
	for _, p := range problems {
		if p.Certificate != "" {
			o.certs.expiring = append(o.certs.expiring, p)
		}
	}
	return nil
}

// certificateProblems are the problems the cluster's conditions report: all but the mere
// warnings, which only an Event announces.
func certificateProblems(ps []pki.Problem) []membership.CertificateProblem {
	var out []membership.CertificateProblem
	for _, p := range ps {
		if p.Severity >= pki.SeverityDegraded {
			out = append(out, membership.CertificateProblem{Message: p.Message, Holds: p.Severity == pki.SeverityInvalid})
		}
	}
	return out
}

// readSecret returns a TLS Secret's parsed content, the digest of its CA bundle and the
// resourceVersion they are of, or nil when the Secret does not exist. Its metadata is read every
// time, uncached; its data only when the cache holds another version, because the operator has
// no business holding or re-parsing key material that did not change.
func (r *Reconciler) readSecret(ctx context.Context, c *etcdv1alpha2.EtcdCluster, name string) (*cachedSecret, error) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: name}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := r.apiReader.Get(ctx, key, meta)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading TLS Secret %s: %w", name, err)
	}
	cluster := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	if cached := r.tlsCache.secret(cluster, name, meta.ResourceVersion); cached != nil {
		return cached, nil
	}
	s := &corev1.Secret{}
	if err := r.apiReader.Get(ctx, key, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading TLS Secret %s: %w", name, err)
	}
	m := pki.Parse(s.Data)
	read := &cachedSecret{resourceVersion: s.ResourceVersion, material: &m, caDigest: desired.CADigest(s.Data[desired.CACertKey]),
		next: pki.ParseNext(s.Data), token: s.Annotations[etcdv1alpha2.AnnotationRotateCAHandled]}
	if ref := metav1.GetControllerOf(s); ref != nil {
		read.controller = ref.UID
	}
	if at := s.Annotations[etcdv1alpha2.AnnotationCALeavesReissuedAt]; at != "" {
		// An unreadable time counts as none: the mark is written again, which only delays
		// the drop of the old CA.
		read.reissuedAt, _ = time.Parse(time.RFC3339, at)
	}
	r.tlsCache.store(cluster, name, read)
	return read, nil
}
