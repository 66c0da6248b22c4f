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
// "Bootstrap"; docs/tls.md): cert-manager's API, which Secrets are missing, and what is wrong with
// the certificates of those that exist. Secrets are read uncached and by name: their metadata on
// every pass, their data only when their resourceVersion changed (tlsCache), and for the user's
// own and the managed ones only: the operator has no business holding key material it does not
// use.
func (r *Reconciler) observeTLS(ctx context.Context, c *etcdv1alpha2.EtcdCluster, now time.Time) (membership.TLS, certificates, error) {
	var t membership.TLS
	var certs certificates
	if c.Spec.TLS == nil {
		return t, certs, nil
	}
	if certManagerRequested(c.Spec.TLS) {
		if r.certManager == nil {
			return t, certs, errNoProbe
		}
		installed, err := r.certManager.CertManagerInstalled()
		if err != nil {
			return t, certs, err
		}
		t.CertManagerMissing = !installed
	}
	if managedTLS(c) {
		plan, err := r.observeManaged(ctx, c, now)
		if err != nil {
			return t, certs, err
		}
		t.Issuing = plan.Missing
		t.Certificates = certificateProblems(plan.Problems)
		certs.managed = &plan
		return t, certs, nil
	}
	exps := byoExpectations(c)
	materials := map[string]*pki.Material{}
	for _, name := range tlsSecretNames(c) {
		rv, err := r.secretVersion(ctx, c.Namespace, name)
		if err != nil {
			return t, certs, err
		}
		switch {
		case rv == "":
			t.MissingSecrets = append(t.MissingSecrets, name)
		case slices.ContainsFunc(exps, func(e pki.Expectation) bool { return e.Secret == name }):
			if materials[name], _, err = r.readMaterial(ctx, c, name, rv); err != nil {
				return t, certs, err
			}
		}
	}
	problems := pki.Check(exps, materials, now)
	t.Certificates = certificateProblems(problems)
	for _, p := range problems {
		if p.Certificate != "" {
			certs.expiring = append(certs.expiring, p)
		}
	}
	return t, certs, nil
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

// observeManaged reads the managed Secrets and plans which to write.
func (r *Reconciler) observeManaged(ctx context.Context, c *etcdv1alpha2.EtcdCluster, now time.Time) (pki.Plan, error) {
	cas, leaves := managedSecrets(c, r.clusterDomain)
	names := make([]string, 0, len(cas)+len(leaves))
	for _, ca := range cas {
		names = append(names, ca.Secret)
	}
	for _, l := range leaves {
		names = append(names, l.Secret)
	}
	observed := map[string]pki.Observed{}
	for _, name := range names {
		rv, err := r.secretVersion(ctx, c.Namespace, name)
		if err != nil {
			return pki.Plan{}, err
		}
		if rv == "" {
			continue
		}
		m, rv, err := r.readMaterial(ctx, c, name, rv)
		if err != nil {
			return pki.Plan{}, err
		}
		observed[name] = pki.Observed{ResourceVersion: rv, Material: m}
	}
	return pki.PlanManaged(cas, leaves, observed, now), nil
}

// secretVersion reads a Secret's metadata, uncached: its resourceVersion, or "" when it does not
// exist.
func (r *Reconciler) secretVersion(ctx context.Context, namespace, name string) (string, error) {
	s := &metav1.PartialObjectMetadata{}
	s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading TLS Secret %s: %w", name, err)
	}
	return s.ResourceVersion, nil
}

// readMaterial returns the parsed content of a Secret whose metadata said resourceVersion rv:
// from the cache when it holds that version, else read in full, uncached, and parsed. It also
// returns the version the content is of, which a full read may find newer.
func (r *Reconciler) readMaterial(ctx context.Context, c *etcdv1alpha2.EtcdCluster, name, rv string) (*pki.Material, string, error) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	if m := r.tlsCache.material(key, name, rv); m != nil {
		return m, rv, nil
	}
	s := &corev1.Secret{}
	if err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, s); err != nil {
		return nil, "", fmt.Errorf("reading TLS Secret %s: %w", name, err)
	}
	m := pki.Parse(s.Data)
	r.tlsCache.store(key, name, s.ResourceVersion, &m)
	return &m, s.ResourceVersion, nil
}
