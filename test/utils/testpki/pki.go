// Package testpki issues throw-away certificate authorities and certificates for tests that
// create TLS Secrets the way a user would (docs/tls.md, "Your own certificates").
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/tlsverify"
)

// CA is a certificate authority that signs Leaf requests.
type CA struct {
	// CertPEM is the CA certificate, for ca.crt.
	CertPEM []byte
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
}

// Leaf says what certificate to issue.
type Leaf struct {
	CommonName  string
	DNSNames    []string
	IPAddresses []net.IP
	// Usages are the extended key usages.
	Usages []x509.ExtKeyUsage
	// NotBefore and NotAfter default to an hour ago and a year from now (validity).
	NotBefore, NotAfter time.Time
}

// Pair is a PEM certificate and its PEM private key.
type Pair struct {
	CertPEM, KeyPEM []byte
}

// validity is how long certificates are valid by default: beyond the 30 days within which the
// operator warns of an expiry (docs/tls.md, "Validation of your own certificates"), so that only
// the tests about expiry meet those warnings.
const validity = 365 * 24 * time.Hour

// NewCA returns a self-signed CA valid from an hour ago for a year.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing CA %s: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert: cert, key: key}, nil
}

// Issue signs a certificate for l.
func (ca *CA) Issue(l Leaf) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	nb, na := l.NotBefore, l.NotAfter
	if nb.IsZero() {
		nb = time.Now().Add(-time.Hour)
	}
	if na.IsZero() {
		na = time.Now().Add(validity)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: l.CommonName},
		NotBefore: nb, NotAfter: na, DNSNames: l.DNSNames, IPAddresses: l.IPAddresses,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: l.Usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, fmt.Errorf("signing %s: %w", l.CommonName, err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})}, nil
}

// ClientConfig is a TLS client configuration trusting roots, presenting client (when its
// certificate is set) and verifying serverName whatever address is dialled, as the operator
// does (tlsverify.As).
func ClientConfig(roots []byte, client Pair, serverName string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(roots) {
		return nil, fmt.Errorf("no CA certificate in the roots")
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	tlsverify.As(t, serverName)
	if len(client.CertPEM) > 0 {
		pair, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
		if err != nil {
			return nil, err
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil
}

// Both lists the server and client usages: etcd's server and peer certificates dial too.
var Both = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}

// ClientOnly is the usage of a client certificate.
var ClientOnly = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// CommonName is the CA's common name, as issued certificates name their issuer.
func (ca *CA) CommonName() string { return ca.cert.Subject.CommonName }
