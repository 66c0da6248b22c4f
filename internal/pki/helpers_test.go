package pki

import (
	"crypto/x509"
	"net"
	"testing"
	"time"
)

// t0 is the fixed clock of these tests.
var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

var (
	serverUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	clientUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
)

// testCA issues a CA at now and loads it.
func testCA(t *testing.T, name string, now time.Time) (*CA, KeyPair) {
	t.Helper()
	kp, err := NewCA(name, CAValidity, now)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(kp.Cert, kp.Key)
	if err != nil {
		t.Fatal(err)
	}
	return ca, kp
}

// issue signs a leaf with ca at now.
func issue(t *testing.T, ca *CA, req LeafRequest, now time.Time) KeyPair {
	t.Helper()
	kp, err := ca.Issue(req, now)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// serverWant is the requirement of a server certificate of cluster etcd in namespace prod.
var serverWant = Requirement{
	CommonName:  "etcd-server",
	DNSNames:    []string{"*.etcd.prod.svc", "*.etcd.prod.svc.cluster.local", "etcd-client.prod.svc", "localhost"},
	IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	Usages:      serverUsages,
}

// secretData is a TLS Secret's data.
func secretData(leaf KeyPair, ca []byte) map[string][]byte {
	d := map[string][]byte{}
	if leaf.Cert != nil {
		d[CertKey] = leaf.Cert
	}
	if leaf.Key != nil {
		d[KeyKey] = leaf.Key
	}
	if ca != nil {
		d[CAKey] = ca
	}
	return d
}

func parsed(data map[string][]byte) *Material {
	m := Parse(data)
	return &m
}
