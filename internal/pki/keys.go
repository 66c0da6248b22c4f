package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
)

// Keys of a kubernetes.io/tls Secret, plus the CA bundle cert-manager also writes.
const (
	// CertKey holds the certificate, followed by any intermediates.
	CertKey = "tls.crt"
	// KeyKey holds the certificate's private key.
	KeyKey = "tls.key"
	// CAKey holds the CA bundle that verifies the peer of a connection.
	CAKey = "ca.crt"
	// NextCertKey and NextKeyKey hold, in a managed CA Secret during step 1 of a rotation, the
	// new CA beside the one that signs (docs/tls.md, "CA rotation").
	NextCertKey = "next.crt"
	NextKeyKey  = "next.key"
)

// PEM block types written and read.
const (
	pemCertificate = "CERTIFICATE"
	pemPKCS8       = "PRIVATE KEY"
	pemPKCS1       = "RSA PRIVATE KEY"
	pemEC          = "EC PRIVATE KEY"
)

// errNoPEM says a key holds no PEM block of the expected type.
var errNoPEM = errors.New("no PEM block")

// newKey draws a private key for a managed CA or leaf. ECDSA P-256: generating it takes
// microseconds where RSA-2048 takes tens to hundreds of milliseconds (a pass issues up to five
// on a 2-core operator), handshakes are cheaper, and every etcd release and Go or gRPC client
// accepts it. cert-manager mode keeps RSA-2048 (docs/tls.md).
func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ECDSA P-256 key: %w", err)
	}
	return k, nil
}

// encodeKey is key as a PKCS #8 PEM block, the form etcd, cert-manager and openssl all read.
func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPKCS8, Bytes: der}), nil
}

// encodeCert is a DER certificate as a PEM block.
func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})
}

// ParseCertificates parses every CERTIFICATE block of data, in order. Other block types are
// skipped, as Go's TLS stack does; no certificate at all is an error.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != pemCertificate {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w of type %s", errNoPEM, pemCertificate)
	}
	return out, nil
}

// ParsePrivateKey parses the first private key block of data: PKCS #8, PKCS #1 (RSA) or SEC 1
// (EC), the forms Go's TLS stack, and so etcd, reads.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, fmt.Errorf("%w holding a private key", errNoPEM)
		}
		var (
			key any
			err error
		)
		switch b.Type {
		case pemPKCS8:
			key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case pemPKCS1:
			key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		case pemEC:
			key, err = x509.ParseECPrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			// The parser's error never quotes the key; it is safe to wrap.
			return nil, fmt.Errorf("parsing the %s block: %w", b.Type, err)
		}
		s, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("the %s block holds a key that cannot sign", b.Type)
		}
		return s, nil
	}
}

// publicKeyMatches reports whether key is the private half of cert's public key.
func publicKeyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	switch pub := key.Public().(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		e, ok := pub.(equaler)
		return ok && e.Equal(cert.PublicKey)
	}
	return false
}

// serialNumber draws a random 128-bit serial number: RFC 5280 allows 20 octets, and random
// serials keep two certificates of one CA from ever sharing one.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("drawing a serial number: %w", err)
	}
	return n, nil
}
