package etcdconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
	ca := newCA(t)
	const name = "etcd-0.etcd.ns.svc"
	serverCert := ca.issue(t, name, x509.ExtKeyUsageServerAuth)
	clientCert := ca.issue(t, "root", x509.ExtKeyUsageClientAuth)

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "root" {
			http.Error(w, "wrong client certificate", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	clientPool := x509.NewCertPool()
	clientPool.AddCert(ca.cert)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serverCert.pair(t)},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientPool,
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	secret := &corev1.Secret{Data: map[string][]byte{
		"ca.crt":                ca.certPEM,
		corev1.TLSCertKey:       clientCert.certPEM,
		corev1.TLSPrivateKeyKey: clientCert.keyPEM,
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

type keyPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

func (k keyPair) pair(t *testing.T) tls.Certificate {
	t.Helper()
	p, err := tls.X509KeyPair(k.certPEM, k.keyPEM)
	if err != nil {
		t.Fatalf("key pair: %v", err)
	}
	return p
}

func newCA(t *testing.T) keyPair {
	t.Helper()
	return makeCert(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "test-ca"},
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}, nil)
}

func (k keyPair) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) keyPair {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{cn}
	}
	return makeCert(t, tmpl, &k)
}

func makeCert(t *testing.T, tmpl *x509.Certificate, parent *keyPair) keyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generating key: %v", err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore = time.Now().Add(-time.Minute)
	tmpl.NotAfter = time.Now().Add(time.Hour)
	parentCert, signer := tmpl, key
	if parent != nil {
		parentCert, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatalf("creating certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parsing certificate: %v", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("marshalling key: %v", err)
	}
	return keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}
