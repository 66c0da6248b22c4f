package etcdproc

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
	"os"
	"path/filepath"
	"time"
)

// PKI is a throw-away certificate authority with one server and one client certificate, for
// clusters started with Options.TLS. The server certificate is valid for 127.0.0.1 and
// "localhost"; the client certificate's common name is "root" (etcd maps a client
// certificate's CN to a user when auth is on).
type PKI struct {
	// Dir holds ca.crt, server.crt, server.key, client.crt and client.key.
	Dir string
	// CAFile, ServerCertFile, ServerKeyFile, ClientCertFile and ClientKeyFile are paths in Dir.
	CAFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile string
	// CAPEM, ClientCertPEM and ClientKeyPEM are the PEM data, e.g. to build a Secret.
	CAPEM, ClientCertPEM, ClientKeyPEM []byte
}

// NewPKI writes a fresh CA and certificates into dir.
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating PKI dir: %w", err)
	}
	ca, err := newCert(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "etcdproc-ca"},
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}, nil)
	if err != nil {
		return nil, err
	}
	server, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "etcdproc-server"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
	}, ca)
	if err != nil {
		return nil, err
	}
	client, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "root"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
	if err != nil {
		return nil, err
	}
	p := &PKI{
		Dir:            dir,
		CAFile:         filepath.Join(dir, "ca.crt"),
		ServerCertFile: filepath.Join(dir, "server.crt"),
		ServerKeyFile:  filepath.Join(dir, "server.key"),
		ClientCertFile: filepath.Join(dir, "client.crt"),
		ClientKeyFile:  filepath.Join(dir, "client.key"),
		CAPEM:          ca.certPEM,
		ClientCertPEM:  client.certPEM,
		ClientKeyPEM:   client.keyPEM,
	}
	for path, data := range map[string][]byte{
		p.CAFile: ca.certPEM, p.ServerCertFile: server.certPEM, p.ServerKeyFile: server.keyPEM,
		p.ClientCertFile: client.certPEM, p.ClientKeyFile: client.keyPEM,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return p, nil
}

// ClientTLS returns a client configuration that trusts the CA and presents the client
// certificate.
func (p *PKI) ClientTLS() (*tls.Config, error) {
	pair, err := tls.X509KeyPair(p.ClientCertPEM, p.ClientKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading client key pair: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CAPEM)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

type certKey struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

func newCert(tmpl *x509.Certificate, parent *certKey) (*certKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("generating serial: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("creating certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding key: %w", err)
	}
	return &certKey{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}
