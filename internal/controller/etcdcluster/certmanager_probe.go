package etcdcluster

import (
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

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
// answer for a while (docs/design/membership-flows.md, "Waiting for TLS material": re-probed every 60 s, so installing cert-manager needs no
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
