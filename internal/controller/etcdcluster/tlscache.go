package etcdcluster

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/pki"
)

// expiryAnnounceInterval is how often one expiring certificate is announced by a Warning Event
// (docs/design/conditions-and-events.md): once a day, because Kubernetes keeps Events for an
// hour by default, so one Warning per operator run would be gone long before the certificate
// expires, while one a day keeps reminding without burying other Events (at most 30 per
// certificate, and only for certificates the user must renew). An operator restart may announce
// once more.
const expiryAnnounceInterval = 24 * time.Hour

// tlsCache is what this operator process remembers of each cluster's TLS Secrets between
// passes: each Secret's parsed content by resourceVersion, so that a pass re-parses a Secret only
// when it changed (each pass still reads its metadata), and when each expiring certificate was
// last announced. It holds no private key (pki.Material keeps none). A restart starts from
// nothing: every Secret is read and parsed once more.
type tlsCache struct {
	mu       sync.Mutex
	clusters map[types.NamespacedName]*clusterTLS
}

type clusterTLS struct {
	secrets   map[string]*cachedSecret
	announced map[string]time.Time
}

// cachedSecret is one Secret's parsed content, and the digest of its CA bundle
// (desired.CADigest), at one resourceVersion. It is shared between passes: read only.
type cachedSecret struct {
	resourceVersion string
	material        *pki.Material
	caDigest        string
	// next is the CA a rotation staged in a managed CA Secret, nil without; token and
	// reissuedAt are the rotation records of its annotations (docs/tls.md, "CA rotation").
	next       *pki.Material
	token      string
	reissuedAt time.Time
	// controller is the UID of the Secret's controlling owner, empty without one: a managed
	// leaf Secret the cluster does not control is the user's, which a move to managed TLS
	// starts from.
	controller types.UID
}

func newTLSCache() *tlsCache { return &tlsCache{clusters: map[types.NamespacedName]*clusterTLS{}} }

// of returns cluster's entry, creating it; the caller holds mu.
func (c *tlsCache) of(cluster types.NamespacedName) *clusterTLS {
	e := c.clusters[cluster]
	if e == nil {
		e = &clusterTLS{secrets: map[string]*cachedSecret{}, announced: map[string]time.Time{}}
		c.clusters[cluster] = e
	}
	return e
}

// secret returns what was read of secret at resourceVersion rv, or nil when the cache holds
// another version or none.
func (c *tlsCache) secret(cluster types.NamespacedName, secret, rv string) *cachedSecret {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.of(cluster).secrets[secret]; ok && s.resourceVersion == rv {
		return s
	}
	return nil
}

// store records what was read of secret.
func (c *tlsCache) store(cluster types.NamespacedName, secret string, read *cachedSecret) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.of(cluster).secrets[secret] = read
}

// announce reports whether the certificate named by key is due for its Warning at now (never
// announced, or not within expiryAnnounceInterval), and if so records now.
func (c *tlsCache) announce(cluster types.NamespacedName, key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.of(cluster)
	if last, ok := e.announced[key]; ok && now.Sub(last) < expiryAnnounceInterval {
		return false
	}
	e.announced[key] = now
	return true
}

// forget drops everything held for a deleted cluster.
func (c *tlsCache) forget(cluster types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clusters, cluster)
}
