package pki

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"
)

// Validities of the certificates the operator issues (docs/tls.md, "Operator-managed
// certificates").
const (
	// CAValidity is a managed CA's lifetime: long, because replacing a CA changes every
	// member's ca.crt, which restarts every member, and CA rotation is not built yet.
	CAValidity = 10 * 365 * 24 * time.Hour
	// LeafValidity is a managed leaf's lifetime. Leaves are renewed at two thirds of it
	// (RenewalFraction), with no member restart, so a short one costs nothing and bounds how
	// long a leaked key is worth anything.
	LeafValidity = 90 * 24 * time.Hour
	// backdate is how far before the moment of issue a certificate's validity starts, so that
	// a node whose clock is a little behind the operator's accepts it at once.
	backdate = 5 * time.Minute
)

// KeyPair is a certificate and its private key, both PEM.
type KeyPair struct {
	Cert, Key []byte
}

// CA is a certificate authority able to sign: its certificate and private key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// errNotCA says a certificate may not sign others.
var errNotCA = errors.New("the certificate is not a CA (basic constraints CA:FALSE or absent)")

// errKeyMismatch says a private key is not the certificate's.
var errKeyMismatch = errors.New("the private key does not belong to the certificate")

// NewCA issues a self-signed CA certificate named commonName, valid from shortly before now for
// validity. It may sign leaves only (path length 0): the operator issues no intermediates.
func NewCA(commonName string, validity time.Duration, now time.Time) (KeyPair, error) {
	key, err := newKey()
	if err != nil {
		return KeyPair{}, err
	}
	serial, err := serialNumber()
	if err != nil {
		return KeyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate).UTC(),
		NotAfter:              now.Add(validity).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		// SubjectKeyId is left to x509.CreateCertificate, which derives it from the public key
		// (RFC 5280, method 1) and copies it into every leaf's AuthorityKeyId: verifiers use it
		// to pick the right CA when a bundle holds two (a CA rotation).
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("signing the CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{Cert: encodeCert(der), Key: keyPEM}, nil
}

// LoadCA parses a CA's certificate (the first of certPEM) and private key, and checks that the
// two belong together and that the certificate may sign.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA key: %w", err)
	}
	if !certs[0].IsCA {
		return nil, errNotCA
	}
	if !publicKeyMatches(certs[0], key) {
		return nil, errKeyMismatch
	}
	return &CA{Cert: certs[0], Key: key}, nil
}

// LeafRequest is what a leaf certificate says: its subject, names and extended key usages,
// and how long it is valid.
type LeafRequest struct {
	CommonName  string
	DNSNames    []string
	IPAddresses []net.IP
	// Usages are the extended key usages: serverAuth for a certificate a listener presents,
	// clientAuth for one a dialler presents.
	Usages   []x509.ExtKeyUsage
	Validity time.Duration
}

// Issue signs a new leaf certificate for req with ca, valid from shortly before now for
// req.Validity but never beyond the CA's own expiry (a leaf outliving its CA would fail
// verification early, and its renewal time would be computed from a lifetime it cannot have).
func (ca *CA) Issue(req LeafRequest, now time.Time) (KeyPair, error) {
	key, err := newKey()
	if err != nil {
		return KeyPair{}, err
	}
	serial, err := serialNumber()
	if err != nil {
		return KeyPair{}, err
	}
	notAfter := now.Add(req.Validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.CommonName},
		NotBefore:    now.Add(-backdate).UTC(),
		NotAfter:     notAfter.UTC(),
		// ECDSA keys sign; they never encipher, so keyEncipherment has no place here.
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           slices.Clone(req.Usages),
		BasicConstraintsValid: true,
		DNSNames:              slices.Clone(req.DNSNames),
		IPAddresses:           slices.Clone(req.IPAddresses),
	}
	der, err := x509.CreateCertificate(nil, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("signing the certificate of %s: %w", req.CommonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{Cert: encodeCert(der), Key: keyPEM}, nil
}
