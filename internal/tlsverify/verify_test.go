package tlsverify_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/tlsverify"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
)

// TestVerifyAsChecksTheNameNotTheAddress: a server dialled by IP whose certificate names only
// *.etcd.ns.svc is accepted for a member name under it, and refused for a name it does not
// cover and for a CA the client does not trust.
func TestVerifyAsChecksTheNameNotTheAddress(t *testing.T) {
	t.Parallel()
	ca, err := testpki.NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(testpki.Leaf{CommonName: "server", DNSNames: []string{"*.etcd.ns.svc"}, Usages: testpki.Both})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	if h, _, _ := net.SplitHostPort(addr); net.ParseIP(h) == nil {
		t.Fatalf("server address %s is not an IP", addr)
	}
	stranger, err := testpki.NewCA("stranger")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		roots []byte
		as    string
		ok    bool
	}{
		"member name under the wildcard": {ca.CertPEM, "etcd-x7k2p.etcd.ns.svc", true},
		"name of another cluster":        {ca.CertPEM, "etcd-x7k2p.other.ns.svc", false},
		"untrusted CA":                   {stranger.CertPEM, "etcd-x7k2p.etcd.ns.svc", false},
	} {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(tc.roots)
		cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		tlsverify.As(cfg, tc.as)
		conn, err := tls.Dial("tcp", addr, cfg)
		if err == nil {
			_ = conn.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: handshake error %v, want success %v", name, err, tc.ok)
		}
	}
}
