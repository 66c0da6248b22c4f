package pki

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"slices"
)

// TrustBundle is the ca.crt that trusts every given CA certificate: duplicates (by DER bytes)
// dropped, the oldest first (by NotBefore, then by DER bytes). The order depends only on the set
// of CAs, never on which is passed first, so that the bundle's bytes, which enter every member's
// template hash, change only when the set does: in the two-step CA rotation of docs/tls.md the
// members restart when the new CA is added and when the old one is dropped, not when the
// operator switches which of the two signs.
func TrustBundle(cas ...*x509.Certificate) []byte {
	uniq := make([]*x509.Certificate, 0, len(cas))
	for _, c := range cas {
		if c != nil && !slices.ContainsFunc(uniq, func(u *x509.Certificate) bool { return bytes.Equal(u.Raw, c.Raw) }) {
			uniq = append(uniq, c)
		}
	}
	slices.SortFunc(uniq, func(a, b *x509.Certificate) int {
		if c := a.NotBefore.Compare(b.NotBefore); c != 0 {
			return c
		}
		return bytes.Compare(a.Raw, b.Raw)
	})
	var out []byte
	for _, c := range uniq {
		out = append(out, encodeCert(c.Raw)...)
	}
	return out
}

// Fingerprint is the SHA-256 of a certificate's DER bytes, in hex.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}
