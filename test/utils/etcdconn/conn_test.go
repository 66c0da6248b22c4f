package etcdconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/utils/testpki"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ep      string
		wantErr bool
		notIP   bool
	}{
		{ep: "http://10.244.0.5:2379"},
		{ep: "https://127.0.0.1:2379"},
		{ep: "https://[fd00::5]:2379"},
		{ep: "https://etcd-0.etcd.default.svc:2379", wantErr: true, notIP: true},
		{ep: "http://localhost:2379", wantErr: true, notIP: true},
		{ep: "http://10.244.0.5", wantErr: true},
		{ep: "unix:///run/etcd.sock", wantErr: true},
		{ep: "http://10.244.0.5:99999", wantErr: true},
	}
	for _, tc := range tests {
		err := ValidateEndpoint(tc.ep)
		if (err != nil) != tc.wantErr {
			t.Errorf("ValidateEndpoint(%q) = %v, want error %t", tc.ep, err, tc.wantErr)
		}
		if errors.Is(err, ErrNotIP) != tc.notIP {
			t.Errorf("ValidateEndpoint(%q) = %v, want ErrNotIP %t", tc.ep, err, tc.notIP)
		}
	}
}

func TestNewRefusesNames(t *testing.T) {
	t.Parallel()
	_, err := New(t.Context(), Options{Endpoints: []string{"http://127.0.0.1:2379", "http://etcd-1.etcd.ns.svc:2379"}})
	if !errors.Is(err, ErrNotIP) {
		t.Fatalf("New with a DNS endpoint: err = %v, want ErrNotIP", err)
	}
}

func TestPodEndpoints(t *testing.T) {
	t.Parallel()
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.PodStatus{PodIP: "10.244.1.7"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: corev1.PodStatus{PodIP: "fd00::9"}},
	}
	eps, missing := PodEndpoints(pods, ClientPort, true)
	if diff := cmp.Diff([]string{"https://10.244.1.7:2379", "https://[fd00::9]:2379"}, eps); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b"}, missing); diff != "" {
		t.Errorf("pods without IP (-want +got):\n%s", diff)
	}
	if _, err := PodEndpoint(&pods[1], ClientPort, false); !errors.Is(err, ErrNoPodIP) {
		t.Errorf("PodEndpoint without IP: err = %v, want ErrNoPodIP", err)
	}
}

// TestTLSConfigVerifiesByServerNameOverIP shows the e2e dial path: connect to an IP, verify the
// certificate against the member's DNS name, and present a client certificate, with no lookup.
func TestTLSConfigVerifiesByServerNameOverIP(t *testing.T) {
	t.Parallel()
	ca, err := testpki.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	const name = "etcd-0.etcd.ns.svc"
	serverCert, _ := mustIssue(t, ca, testpki.Leaf{CommonName: name, DNSNames: []string{name}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	_, clientCert := mustIssue(t, ca, testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "root" {
			http.Error(w, "wrong client certificate", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	clientPool := x509.NewCertPool()
	clientPool.AppendCertsFromPEM(ca.CertPEM)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serverCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientPool,
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	secret := &corev1.Secret{Data: map[string][]byte{
		"ca.crt":                ca.CertPEM,
		corev1.TLSCertKey:       clientCert.CertPEM,
		corev1.TLSPrivateKeyKey: clientCert.KeyPEM,
	}}
	get := func(cfg *tls.Config) (int, error) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get(srv.URL) // srv.URL is https://127.0.0.1:port
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}

	good, err := TLSConfigFromSecret(secret, name)
	if err != nil {
		t.Fatalf("TLSConfigFromSecret: %v", err)
	}
	if got, err := get(good); err != nil || got != http.StatusNoContent {
		t.Errorf("request with the right server name = %d, %v; want 204 (client certificate root accepted)", got, err)
	}
	wrong, err := TLSConfigFromSecret(secret, "etcd-1.etcd.ns.svc")
	if err != nil {
		t.Fatalf("TLSConfigFromSecret: %v", err)
	}
	var certErr *tls.CertificateVerificationError
	if _, err := get(wrong); !errors.As(err, &certErr) {
		t.Errorf("request with the wrong server name: err = %v, want a certificate verification error", err)
	}
	if _, err := TLSConfig([]byte("not pem"), nil, nil, name); err == nil {
		t.Error("TLSConfig without a CA: err = nil, want an error")
	}
}

// mustIssue issues l from ca and returns it as a TLS certificate and as its PEM pair.
func mustIssue(t *testing.T, ca *testpki.CA, l testpki.Leaf) (tls.Certificate, testpki.Pair) {
	t.Helper()
	p, err := ca.Issue(l)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}
