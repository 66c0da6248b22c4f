package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
)

// FaultKind is what is wrong with one key of a TLS Secret.
type FaultKind int

// Kinds of faults, in the order they are reported for one key.
const (
	// FaultMissing: the key is absent or empty.
	FaultMissing FaultKind = iota + 1
	// FaultUnparsable: the key holds no PEM block of the expected type, or one that does not
	// parse.
	FaultUnparsable
	// FaultKeyMismatch: tls.key is not the private key of the certificate in tls.crt.
	FaultKeyMismatch
)

// Fault is what is wrong with one key of a TLS Secret.
type Fault struct {
	Key  string
	Kind FaultKind
	// Detail is the parser's reason for FaultUnparsable; it never quotes key material.
	Detail string
}

// Material is a TLS Secret's data, parsed once: what the checks and the renewal decision need.
// It holds no private key: whether tls.key belongs to tls.crt is decided while parsing, so a
// cache of Materials keeps no key material.
type Material struct {
	// Certs is tls.crt: the leaf first, then any intermediates. Nil when missing or
	// unparsable.
	Certs []*x509.Certificate
	// CAs is ca.crt. Nil when missing or unparsable.
	CAs []*x509.Certificate
	// CADigest is "sha256:<hex>" of ca.crt's bytes, "" without: the planner compares the trust
	// bundle of a leaf with its CA's through it.
	CADigest string
	// Faults are what is wrong, in key order (tls.crt, tls.key, ca.crt).
	Faults []Fault
}

// Leaf is the first certificate of tls.crt, or nil.
func (m *Material) Leaf() *x509.Certificate {
	if len(m.Certs) == 0 {
		return nil
	}
	return m.Certs[0]
}

// Fault returns the fault of key, or nil.
func (m *Material) Fault(key string) *Fault {
	for i := range m.Faults {
		if m.Faults[i].Key == key {
			return &m.Faults[i]
		}
	}
	return nil
}

// Parse reads a TLS Secret's data: tls.crt, tls.key and ca.crt. A missing key is a fault of
// kind FaultMissing whether or not the Secret's role needs it; the checks decide which matter.
func Parse(data map[string][]byte) Material {
	var m Material
	fault := func(key string, kind FaultKind, err error) {
		f := Fault{Key: key, Kind: kind}
		if err != nil {
			f.Detail = err.Error()
		}
		m.Faults = append(m.Faults, f)
	}
	if raw := data[CertKey]; len(raw) == 0 {
		fault(CertKey, FaultMissing, nil)
	} else if certs, err := ParseCertificates(raw); err != nil {
		fault(CertKey, FaultUnparsable, err)
	} else {
		m.Certs = certs
	}
	if raw := data[KeyKey]; len(raw) == 0 {
		fault(KeyKey, FaultMissing, nil)
	} else if key, err := ParsePrivateKey(raw); err != nil {
		fault(KeyKey, FaultUnparsable, err)
	} else if leaf := m.Leaf(); leaf != nil && !publicKeyMatches(leaf, key) {
		fault(KeyKey, FaultKeyMismatch, nil)
	}
	if raw := data[CAKey]; len(raw) == 0 {
		fault(CAKey, FaultMissing, nil)
	} else {
		sum := sha256.Sum256(raw)
		m.CADigest = "sha256:" + hex.EncodeToString(sum[:])
		if cas, err := ParseCertificates(raw); err != nil {
			fault(CAKey, FaultUnparsable, err)
		} else {
			m.CAs = cas
		}
	}
	return m
}

// ParseNext reads the CA a rotation staged in a CA Secret (next.crt and next.key) as a Material
// whose tls.crt and tls.key they are; nil when the Secret holds neither.
func ParseNext(data map[string][]byte) *Material {
	if len(data[NextCertKey]) == 0 && len(data[NextKeyKey]) == 0 {
		return nil
	}
	m := Parse(map[string][]byte{CertKey: data[NextCertKey], KeyKey: data[NextKeyKey]})
	return &m
}
