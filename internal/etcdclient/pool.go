package etcdclient

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Dialer opens a client for a Config; New is the production dialer. Tests inject their own
// through WithDialer.
type Dialer func(ctx context.Context, cfg Config) (DialedClient, error)

// PoolOption configures a Pool.
type PoolOption func(*Pool)

// WithDialer replaces the dialer (New by default).
func WithDialer(d Dialer) PoolOption {
	return func(p *Pool) { p.dial = d }
}

// Key identifies what a pooled client was dialled with: the endpoint set (order-insensitive),
// the TLS material digest and a digest of the credentials. A client is reused only while all
// three stay the same (docs/design/quorum.md, "Pooling").
type Key struct {
	// Endpoints are the sorted, de-duplicated endpoints joined by commas.
	Endpoints string
	// TLSDigest is Config.TLSDigest.
	TLSDigest string
	// CredentialsDigest is a keyed hash of the username and password, never the password.
	CredentialsDigest string
}

// Pool keeps one client per cluster across reconciles, so an idle cluster is not re-dialled
// (and, with auth, not re-authenticated with a bcrypt-costly password check) on every pass. A
// cluster's client is closed and replaced when its Key changes, and closed when the cluster is
// forgotten. A Pool is safe for concurrent use.
type Pool struct {
	dial Dialer
	// salt keys the credentials digest, so a Key never holds an offline-guessable hash of a
	// password.
	salt  []byte
	dials atomic.Int64

	mu      sync.Mutex
	closed  bool
	clients map[string]*pooled
}

type pooled struct {
	key    Key
	client DialedClient
}

// NewPool returns an empty pool.
func NewPool(opts ...PoolOption) *Pool {
	p := &Pool{
		dial:    func(ctx context.Context, cfg Config) (DialedClient, error) { return New(ctx, cfg) },
		salt:    make([]byte, 32),
		clients: map[string]*pooled{},
	}
	_, _ = rand.Read(p.salt) // never fails (crypto/rand documents it)
	for _, o := range opts {
		o(p)
	}
	return p
}

// ErrPoolClosed is returned by Get after Close.
var ErrPoolClosed = errors.New("etcd client pool is closed")

// KeyOf returns the key cfg would be pooled under.
func (p *Pool) KeyOf(cfg Config) Key {
	eps := slices.Clone(cfg.Endpoints)
	slices.Sort(eps)
	eps = slices.Compact(eps)
	k := Key{Endpoints: strings.Join(eps, ","), TLSDigest: cfg.TLSDigest}
	if cfg.Username != "" || cfg.Password != "" {
		mac := hmac.New(sha256.New, p.salt)
		mac.Write([]byte(cfg.Username))
		mac.Write([]byte{0})
		mac.Write([]byte(cfg.Password))
		k.CredentialsDigest = hex.EncodeToString(mac.Sum(nil))
	}
	return k
}

// Get returns the client for cluster (e.g. "namespace/name"), dialling it when the pool has
// none or when cfg's Key differs from the pooled one (the old client is then closed). The
// returned client is shared: callers must not close it; a client that the pool replaced or
// forgot fails with ErrClosed.
func (p *Pool) Get(ctx context.Context, cluster string, cfg Config) (Client, error) {
	if cfg.TLS != nil && cfg.TLSDigest == "" {
		return nil, &Error{Op: "dial", kind: ErrInvalidConfig, msg: ErrTLSDigestRequired.Error(), err: ErrTLSDigestRequired}
	}
	key := p.KeyOf(cfg)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if e, ok := p.clients[cluster]; ok && e.key == key {
		p.mu.Unlock()
		return e.client, nil
	}
	p.mu.Unlock()

	// Dial outside the lock: a slow cluster must not hold up the others.
	c, err := p.dial(ctx, cfg)
	p.dials.Add(1)
	if err != nil {
		return nil, err
	}

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.Join(ErrPoolClosed, c.Close())
	}
	old := p.clients[cluster]
	if old != nil && old.key == key {
		// Another caller dialled the same key meanwhile; keep theirs.
		p.mu.Unlock()
		_ = c.Close()
		return old.client, nil
	}
	p.clients[cluster] = &pooled{key: key, client: c}
	p.mu.Unlock()
	if old != nil {
		_ = old.client.Close() // replaced: endpoints, TLS material or credentials changed
	}
	return c, nil
}

// Forget closes and drops cluster's client, e.g. when the cluster is deleted. Forgetting an
// unknown cluster does nothing.
func (p *Pool) Forget(cluster string) error {
	p.mu.Lock()
	e := p.clients[cluster]
	delete(p.clients, cluster)
	p.mu.Unlock()
	if e == nil {
		return nil
	}
	return e.client.Close()
}

// Pooled returns cluster's pooled client without dialling (Clients.Pooled).
func (p *Pool) Pooled(cluster string) (Client, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.clients[cluster]; ok {
		return e.client, true
	}
	return nil, false
}

// Close closes every client; Get fails afterwards.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	clients := p.clients
	p.clients = map[string]*pooled{}
	p.mu.Unlock()
	var errs []error
	for _, e := range clients {
		errs = append(errs, e.client.Close())
	}
	return errors.Join(errs...)
}

// Dials returns how many times the pool has dialled (successfully or not). An idle cluster
// reconciled many times should account for one.
func (p *Pool) Dials() int64 { return p.dials.Load() }

// Len returns the number of pooled clients.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients)
}

// DigestTLSMaterial returns a digest of the byte slices TLS material was built from (CA bundle,
// certificate, key, in a fixed order), for Config.TLSDigest. Each part is length-prefixed so
// that moving bytes between parts changes the digest.
func DigestTLSMaterial(parts ...[]byte) string {
	h := sha256.New()
	for _, part := range parts {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}
