package etcdclient_test

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
)

func tlsConfig() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS12} }

// closable is a fake dialled client that records whether it was closed.
type closable struct {
	*etcdfake.Recorder
	mu     sync.Mutex
	closed bool
	cfg    etcdclient.Config
}

func (c *closable) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *closable) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

type fakeDialer struct {
	mu     sync.Mutex
	dialed []*closable
	err    error
}

func (d *fakeDialer) dial(_ context.Context, cfg etcdclient.Config) (etcdclient.DialedClient, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	c := &closable{Recorder: &etcdfake.Recorder{}, cfg: cfg}
	d.dialed = append(d.dialed, c)
	return c, nil
}

func TestPoolReusesClientWhileKeyIsUnchanged(t *testing.T) {
	t.Parallel()
	d := &fakeDialer{}
	p := etcdclient.NewPool(etcdclient.WithDialer(d.dial))
	cfg := etcdclient.Config{Endpoints: []string{"http://b:2379", "http://a:2379"}, Username: "root", Password: "pw"}
	first, err := p.Get(t.Context(), "ns/etcd", cfg)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	for range 50 {
		// The same set in another order is the same key.
		c, err := p.Get(t.Context(), "ns/etcd", etcdclient.Config{Endpoints: []string{"http://a:2379", "http://b:2379", "http://a:2379"}, Username: "root", Password: "pw"})
		if err != nil || c != first {
			t.Fatalf("Get returned %p, %v; want the pooled %p", c, err, first)
		}
	}
	if got := p.Dials(); got != 1 {
		t.Fatalf("Dials() = %d, want 1", got)
	}
}

func TestPoolRedialsWhenKeyChanges(t *testing.T) {
	t.Parallel()
	base := etcdclient.Config{Endpoints: []string{"https://a:2379"}, TLS: tlsConfig(), TLSDigest: "d1", Username: "root", Password: "pw"}
	tests := []struct {
		name   string
		change func(*etcdclient.Config)
	}{
		{"endpoint added", func(c *etcdclient.Config) { c.Endpoints = append(c.Endpoints, "https://b:2379") }},
		{"TLS material rotated", func(c *etcdclient.Config) { c.TLSDigest = "d2" }},
		{"password changed", func(c *etcdclient.Config) { c.Password = "pw2" }},
		{"username changed", func(c *etcdclient.Config) { c.Username = "admin" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := &fakeDialer{}
			p := etcdclient.NewPool(etcdclient.WithDialer(d.dial))
			if _, err := p.Get(t.Context(), "ns/etcd", base); err != nil {
				t.Fatalf("Get: %v", err)
			}
			next := base
			next.Endpoints = append([]string(nil), base.Endpoints...)
			tt.change(&next)
			if p.KeyOf(next) == p.KeyOf(base) {
				t.Fatalf("key did not change")
			}
			if _, err := p.Get(t.Context(), "ns/etcd", next); err != nil {
				t.Fatalf("Get: %v", err)
			}
			if p.Dials() != 2 || !d.dialed[0].isClosed() || d.dialed[1].isClosed() || p.Len() != 1 {
				t.Fatalf("dials=%d first closed=%v second closed=%v len=%d; want 2, true, false, 1",
					p.Dials(), d.dialed[0].isClosed(), d.dialed[1].isClosed(), p.Len())
			}
		})
	}
}

func TestPoolKeyHoldsNoPassword(t *testing.T) {
	t.Parallel()
	p := etcdclient.NewPool()
	k := p.KeyOf(etcdclient.Config{Endpoints: []string{"http://a:2379"}, Username: "root", Password: "hunter2"})
	if k.CredentialsDigest == "" || k.CredentialsDigest == "hunter2" {
		t.Fatalf("credentials digest %q", k.CredentialsDigest)
	}
	// Keyed per pool: another pool's digest of the same password differs.
	if etcdclient.NewPool().KeyOf(etcdclient.Config{Username: "root", Password: "hunter2"}).CredentialsDigest == k.CredentialsDigest {
		t.Fatalf("credentials digest is not keyed")
	}
}

func TestPoolForgetAndClose(t *testing.T) {
	t.Parallel()
	d := &fakeDialer{}
	p := etcdclient.NewPool(etcdclient.WithDialer(d.dial))
	cfg := etcdclient.Config{Endpoints: []string{"http://a:2379"}}
	for _, cluster := range []string{"ns/one", "ns/two"} {
		if _, err := p.Get(t.Context(), cluster, cfg); err != nil {
			t.Fatalf("Get: %v", err)
		}
	}
	if err := p.Forget("ns/one"); err != nil {
		t.Fatalf("Forget: %v", err)
	}
	if !d.dialed[0].isClosed() || d.dialed[1].isClosed() || p.Len() != 1 {
		t.Fatalf("after Forget: closed %v %v, len %d", d.dialed[0].isClosed(), d.dialed[1].isClosed(), p.Len())
	}
	if err := p.Forget("ns/unknown"); err != nil {
		t.Fatalf("Forget(unknown): %v", err)
	}
	// Forgotten clusters are dialled again on the next Get.
	if _, err := p.Get(t.Context(), "ns/one", cfg); err != nil || p.Dials() != 3 {
		t.Fatalf("Get after Forget: %v, dials %d", err, p.Dials())
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, c := range d.dialed {
		if !c.isClosed() {
			t.Errorf("client %d not closed by Pool.Close", i)
		}
	}
	if _, err := p.Get(t.Context(), "ns/one", cfg); !errors.Is(err, etcdclient.ErrPoolClosed) {
		t.Fatalf("Get after Close: %v, want ErrPoolClosed", err)
	}
}

func TestPoolDialFailureIsNotPooled(t *testing.T) {
	t.Parallel()
	d := &fakeDialer{err: etcdclient.NewError("dial", etcdclient.ErrAuthFailed)}
	p := etcdclient.NewPool(etcdclient.WithDialer(d.dial))
	cfg := etcdclient.Config{Endpoints: []string{"http://a:2379"}, Username: "root", Password: "wrong"}
	if _, err := p.Get(t.Context(), "ns/etcd", cfg); !errors.Is(err, etcdclient.ErrAuthFailed) {
		t.Fatalf("Get: %v, want ErrAuthFailed", err)
	}
	if _, err := p.Get(t.Context(), "ns/etcd", cfg); !errors.Is(err, etcdclient.ErrAuthFailed) || p.Dials() != 2 || p.Len() != 0 {
		t.Fatalf("second Get: %v, dials %d, len %d", err, p.Dials(), p.Len())
	}
}

func TestPoolRequiresTLSDigest(t *testing.T) {
	t.Parallel()
	p := etcdclient.NewPool(etcdclient.WithDialer((&fakeDialer{}).dial))
	_, err := p.Get(t.Context(), "ns/etcd", etcdclient.Config{Endpoints: []string{"https://a:2379"}, TLS: tlsConfig()})
	if !errors.Is(err, etcdclient.ErrTLSDigestRequired) || p.Dials() != 0 {
		t.Fatalf("Get with TLS and no digest: %v (dials %d)", err, p.Dials())
	}
}

func TestPoolConcurrentGet(t *testing.T) {
	t.Parallel()
	d := &fakeDialer{}
	p := etcdclient.NewPool(etcdclient.WithDialer(d.dial))
	cfg := etcdclient.Config{Endpoints: []string{"http://a:2379"}}
	var wg sync.WaitGroup
	clients := make([]etcdclient.Client, 8)
	for i := range clients {
		wg.Go(func() {
			c, err := p.Get(context.Background(), "ns/etcd", cfg)
			if err != nil {
				t.Errorf("Get: %v", err)
			}
			clients[i] = c
		})
	}
	wg.Wait()
	for _, c := range clients[1:] {
		if c != clients[0] {
			t.Fatalf("concurrent Gets returned different clients")
		}
	}
	// Racing dials of one key are allowed, but only one client survives.
	closedOrKept := 0
	for _, c := range d.dialed {
		if c.isClosed() {
			closedOrKept++
		}
	}
	if len(d.dialed)-closedOrKept != 1 {
		t.Fatalf("%d dialled, %d closed: want exactly one open", len(d.dialed), closedOrKept)
	}
}

func TestDigestTLSMaterial(t *testing.T) {
	t.Parallel()
	a := etcdclient.DigestTLSMaterial([]byte("ca"), []byte("cert"), []byte("key"))
	if a != etcdclient.DigestTLSMaterial([]byte("ca"), []byte("cert"), []byte("key")) {
		t.Fatalf("digest not stable")
	}
	if a == etcdclient.DigestTLSMaterial([]byte("cac"), []byte("ert"), []byte("key")) {
		t.Fatalf("moving bytes between parts kept the digest")
	}
}
