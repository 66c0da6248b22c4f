package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// certManagerGroupVersion serves the Certificates the operator asks cert-manager for.
const certManagerGroupVersion = "cert-manager.io/v1"

// CertManagerProbe answers whether the API server serves cert-manager's Certificate API. Kept
// behind an interface so that the answer reaches the planner as a plain value, and tests can
// give any answer.
type CertManagerProbe interface {
	CertManagerInstalled() (bool, error)
}

// resourceLister is the one discovery call the probe makes.
type resourceLister interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// discoveryProbe asks discovery whether cert-manager.io/v1 serves certificates, and trusts the
// answer for a while (behaviour.md §4: re-probed every 60 s, so installing cert-manager needs no
// operator restart, while a fleet of clusters costs one discovery call a minute).
type discoveryProbe struct {
	api   resourceLister
	clock clock.PassiveClock
	ttl   time.Duration

	mu        sync.Mutex
	known     bool
	installed bool
	at        time.Time
}

// NewCertManagerProbe returns a CertManagerProbe that asks api at most once per ttl.
func NewCertManagerProbe(api resourceLister, clk clock.PassiveClock, ttl time.Duration) CertManagerProbe {
	return &discoveryProbe{api: api, clock: clk, ttl: ttl}
}

// CertManagerInstalled returns the cached answer while it is fresh. A failed discovery call keeps
// the last answer, if there is one, rather than flipping the cluster's conditions on an API
// server hiccup; without one the error is returned, and the pass is retried.
func (p *discoveryProbe) CertManagerInstalled() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if p.known && now.Sub(p.at) < p.ttl {
		return p.installed, nil
	}
	list, err := p.api.ServerResourcesForGroupVersion(certManagerGroupVersion)
	var installed bool
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		if p.known {
			return p.installed, nil
		}
		return false, fmt.Errorf("asking the API server whether it serves %s: %w", certManagerGroupVersion, err)
	default:
		installed = slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "certificates" })
	}
	p.known, p.installed, p.at = true, installed, now
	return installed, nil
}

// failingProbe stands in when no discovery client could be built: it fails closed, so a cluster
// asking for cert-manager starts no member.
type failingProbe struct{ err error }

func (f failingProbe) CertManagerInstalled() (bool, error) { return false, f.err }

// defaultCertManagerProbe builds the discovery-backed probe from a REST config.
func defaultCertManagerProbe(cfg *rest.Config, clk clock.PassiveClock) CertManagerProbe {
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return failingProbe{fmt.Errorf("building a discovery client: %w", err)}
	}
	return NewCertManagerProbe(d, clk, membership.CertManagerReprobe)
}

// errNoProbe is returned for a cluster asking for cert-manager when the Reconciler was built
// without a probe.
var errNoProbe = errors.New("no cert-manager probe configured")

// certManagerRequested reports whether spec.tls asks cert-manager for any certificate.
func certManagerRequested(t *etcdv1alpha2.EtcdClusterTLS) bool {
	return t != nil && ((t.Client != nil && t.Client.CertManager != nil) || (t.Peer != nil && t.Peer.CertManager != nil))
}

// tlsSecretNames are the Secrets spec.tls refers to, the operator's client Secret included,
// sorted: the ones the user names, and the ones cert-manager is to issue (api.md §7).
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

// observeTLS finds which of the TLS material spec.tls asks for is missing (behaviour.md §4):
// cert-manager's API, and the Secrets, read uncached and by name (metadata only: the operator
// has no business holding key material it does not use).
func (p *pass) observeTLS(ctx context.Context) error {
	c := p.cluster
	p.tls = membership.TLS{}
	if c.Spec.TLS == nil {
		return nil
	}
	if certManagerRequested(c.Spec.TLS) {
		if p.r.certManager == nil {
			return errNoProbe
		}
		installed, err := p.r.certManager.CertManagerInstalled()
		if err != nil {
			return err
		}
		p.tls.CertManagerMissing = !installed
	}
	for _, name := range tlsSecretNames(c) {
		s := &metav1.PartialObjectMetadata{}
		s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := p.r.apiReader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, s)
		switch {
		case apierrors.IsNotFound(err):
			p.tls.MissingSecrets = append(p.tls.MissingSecrets, name)
		case err != nil:
			return fmt.Errorf("reading TLS Secret %s: %w", name, err)
		}
	}
	return nil
}
