package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestIssuedLeafVerifies: a leaf issued by a new CA verifies against it for its names and
// usages, and says exactly what was asked.
func TestIssuedLeafVerifies(t *testing.T) {
	t.Parallel()
	ca, caPair := testCA(t, "etcd CA", t0)
	kp := issue(t, ca, serverWant.Request(LeafValidity), t0)
	m := Parse(secretData(kp, caPair.Cert))
	if len(m.Faults) != 0 {
		t.Fatalf("faults: %+v", m.Faults)
	}
	leaf := m.Leaf()
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, host := range []string{"etcd-abcde.etcd.prod.svc", "etcd-abcde.etcd.prod.svc.cluster.local", "etcd-client.prod.svc", "127.0.0.1"} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil {
			t.Errorf("verifying for %s: %v", host, err)
		}
	}
	if got := leaf.NotAfter.Sub(t0); got != LeafValidity {
		t.Errorf("lifetime from issue %s, want %s", got, LeafValidity)
	}
	if !slices.Equal(leaf.ExtKeyUsage, serverUsages) || leaf.Subject.CommonName != "etcd-server" || leaf.IsCA {
		t.Errorf("leaf says %v %q CA=%v", leaf.ExtKeyUsage, leaf.Subject.CommonName, leaf.IsCA)
	}
	if !slices.Equal(leaf.AuthorityKeyId, ca.Cert.SubjectKeyId) || len(leaf.AuthorityKeyId) == 0 {
		t.Error("the leaf does not name its CA's key")
	}
	if !ca.Cert.IsCA || !ca.Cert.MaxPathLenZero || ca.Cert.NotAfter.Sub(t0) != CAValidity {
		t.Errorf("CA: IsCA=%v pathlen0=%v lifetime %s", ca.Cert.IsCA, ca.Cert.MaxPathLenZero, ca.Cert.NotAfter.Sub(t0))
	}
	if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("leaf key is %T, want ECDSA", leaf.PublicKey)
	}
}

// TestLeafNeverOutlivesItsCA: a leaf issued near the CA's end is cut at the CA's expiry.
func TestLeafNeverOutlivesItsCA(t *testing.T) {
	t.Parallel()
	ca, _ := testCA(t, "etcd CA", t0)
	late := ca.Cert.NotAfter.Add(-24 * time.Hour)
	leaf, err := ParseCertificates(issue(t, ca, serverWant.Request(LeafValidity), late).Cert)
	if err != nil {
		t.Fatal(err)
	}
	if !leaf[0].NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("leaf expires %s, CA %s", leaf[0].NotAfter, ca.Cert.NotAfter)
	}
}

func TestLoadCARefuses(t *testing.T) {
	t.Parallel()
	ca, caPair := testCA(t, "a", t0)
	_, other := testCA(t, "b", t0)
	leaf := issue(t, ca, serverWant.Request(LeafValidity), t0)
	if _, err := LoadCA(caPair.Cert, other.Key); !errors.Is(err, errKeyMismatch) {
		t.Errorf("another CA's key: %v", err)
	}
	if _, err := LoadCA(leaf.Cert, leaf.Key); !errors.Is(err, errNotCA) {
		t.Errorf("a leaf: %v", err)
	}
	if _, err := LoadCA([]byte("junk"), caPair.Key); !errors.Is(err, errNoPEM) {
		t.Errorf("junk: %v", err)
	}
}

// TestParsePrivateKeyForms reads the three PEM forms Go's TLS stack reads.
func TestParsePrivateKeyForms(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := encodeKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"PKCS #1": pem.EncodeToMemory(&pem.Block{Type: pemPKCS1, Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}),
		"SEC 1":   append([]byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"), pem.EncodeToMemory(&pem.Block{Type: pemEC, Bytes: ecDER})...),
		"PKCS #8": pkcs8,
	} {
		if _, err := ParsePrivateKey(data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParsePrivateKey([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")); err == nil {
		t.Error("a broken PKCS #8 block parsed")
	}
}

func TestParseSeesEveryFault(t *testing.T) {
	t.Parallel()
	ca, caPair := testCA(t, "a", t0)
	a := issue(t, ca, LeafRequest{CommonName: "a", DNSNames: []string{"a"}, Validity: time.Hour}, t0)
	b := issue(t, ca, LeafRequest{CommonName: "b", DNSNames: []string{"b"}, Validity: time.Hour}, t0)
	cases := []struct {
		name string
		data map[string][]byte
		want []Fault
	}{
		{"complete", secretData(a, caPair.Cert), nil},
		{"empty", map[string][]byte{}, []Fault{{Key: CertKey, Kind: FaultMissing}, {Key: KeyKey, Kind: FaultMissing}, {Key: CAKey, Kind: FaultMissing}}},
		{"mismatched key", secretData(KeyPair{Cert: a.Cert, Key: b.Key}, caPair.Cert), []Fault{{Key: KeyKey, Kind: FaultKeyMismatch}}},
		{"junk certificate", secretData(KeyPair{Cert: []byte("junk"), Key: a.Key}, []byte("junk")), []Fault{{Key: CertKey, Kind: FaultUnparsable}, {Key: CAKey, Kind: FaultUnparsable}}},
	}
	for _, c := range cases {
		m := Parse(c.data)
		var got []Fault
		for _, f := range m.Faults {
			got = append(got, Fault{Key: f.Key, Kind: f.Kind})
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: faults %+v, want %+v", c.name, got, c.want)
		}
	}
}
