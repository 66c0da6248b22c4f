package pki

import (
	"bytes"
	"crypto/x509"
	"net"
	"slices"
	"time"
)

// Requirement is what a managed leaf certificate must say: its names and extended key usages.
type Requirement struct {
	CommonName  string
	DNSNames    []string
	IPAddresses []net.IP
	Usages      []x509.ExtKeyUsage
}

// Request is the leaf request that meets r, valid for validity.
func (r Requirement) Request(validity time.Duration) LeafRequest {
	return LeafRequest{CommonName: r.CommonName, DNSNames: r.DNSNames, IPAddresses: r.IPAddresses, Usages: r.Usages, Validity: validity}
}

// RenewAt is when a leaf is due for renewal: two thirds into its lifetime, which leaves a third
// of it (30 days of a 90-day leaf) to retry a renewal that fails, as cert-manager does by
// default.
func RenewAt(leaf *x509.Certificate) time.Time {
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	return leaf.NotBefore.Add(life / 3 * 2)
}

// Renewal is the decision about one leaf certificate.
type Renewal struct {
	// Due says the leaf must be issued again now.
	Due bool
	// Reason says why, for logs and Events; empty when not due.
	Reason string
	// At is when the leaf falls due by age; zero when Due.
	At time.Time
}

// DecideRenewal decides whether leaf must be issued again: when it is not signed by ca (the CA
// in the CA Secret now, so that a leaf is only ever trusted through the CA the operator holds),
// when its names or key usages differ from want, or at two thirds of its lifetime.
func DecideRenewal(leaf, ca *x509.Certificate, want Requirement, now time.Time) Renewal {
	due := func(reason string) Renewal { return Renewal{Due: true, Reason: reason} }
	switch {
	case !signedBy(leaf, ca):
		return due("it is not signed by the current CA")
	case leaf.Subject.CommonName != want.CommonName:
		return due("its common name differs from the required " + want.CommonName)
	case !sameStrings(leaf.DNSNames, want.DNSNames) || !sameStrings(ipStrings(leaf.IPAddresses), ipStrings(want.IPAddresses)):
		return due("its subject alternative names differ from the required ones")
	case !sameUsages(leaf.ExtKeyUsage, want.Usages):
		return due("its extended key usages differ from the required ones")
	}
	at := RenewAt(leaf)
	if !now.Before(at) {
		return due("it is two thirds into its lifetime")
	}
	return Renewal{At: at}
}

// signedBy reports whether ca issued leaf: the names chain and ca's key verifies the signature.
func signedBy(leaf, ca *x509.Certificate) bool {
	return bytes.Equal(leaf.RawIssuer, ca.RawSubject) && leaf.CheckSignatureFrom(ca) == nil
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

// sameStrings compares two sets of names, ignoring order and duplicates.
func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func sameUsages(a, b []x509.ExtKeyUsage) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
