package etcdproc

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
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
	ca, err := testpki.NewCA("etcdproc-ca")
	if err != nil {
		return nil, err
	}
	server, err := ca.Issue(testpki.Leaf{CommonName: "etcdproc-server", Usages: testpki.Both,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}})
	if err != nil {
		return nil, err
	}
	client, err := ca.Issue(testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
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
		CAPEM:          ca.CertPEM,
		ClientCertPEM:  client.CertPEM,
		ClientKeyPEM:   client.KeyPEM,
	}
	for path, data := range map[string][]byte{
		p.CAFile: ca.CertPEM, p.ServerCertFile: server.CertPEM, p.ServerKeyFile: server.KeyPEM,
		p.ClientCertFile: client.CertPEM, p.ClientKeyFile: client.KeyPEM,
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
