package pki

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"time"
)

// CASpec is a CA Secret the operator manages.
type CASpec struct {
	Secret, CommonName string
}

// LeafSpec is a leaf certificate Secret the operator manages, and the CA Secret that signs it.
type LeafSpec struct {
	Secret, CA string
	Want       Requirement
}

// Observed is a managed Secret as a pass saw it. A Secret absent from the pass's map does not
// exist.
type Observed struct {
	ResourceVersion string
	Material        *Material
}

// WriteKind is what a write issues.
type WriteKind int

// Kinds of writes.
const (
	// WriteCA creates a CA Secret. An existing CA Secret is never replaced.
	WriteCA WriteKind = iota + 1
	// WriteLeaf creates a leaf Secret or replaces its data.
	WriteLeaf
)

// Write is one managed Secret to write.
type Write struct {
	Kind   WriteKind
	Secret string
	// Create says the Secret does not exist; otherwise its data is replaced.
	Create bool
	// Reason says why, for logs and Events.
	Reason string
	// CommonName is a CA's subject (WriteCA).
	CommonName string
	// Signer is the CA Secret that signs a leaf, and SignerVersion the resourceVersion of it
	// the decision was taken on: the leaf must be signed by that CA and no other, so the
	// executor refuses to sign when the Secret it reads has another version.
	Signer, SignerVersion string
	// Request is what a leaf says (WriteLeaf).
	Request LeafRequest
}

// Plan is which managed Secrets a pass writes, and what it learnt doing so.
type Plan struct {
	// Writes are the Secrets to write, every CA before any leaf.
	Writes []Write
	// Missing names the leaf Secrets that do not exist yet, sorted: nothing that starts etcd
	// may go ahead until they do.
	Missing []string
	// Problems are CA Secrets the operator cannot use; it never replaces one by itself.
	Problems []Problem
	// NextRenewal is when the earliest leaf not written now falls due; zero when none.
	NextRenewal time.Time
}

// PlanManaged decides which managed Secrets to write (docs/tls.md, "Operator-managed
// certificates"). It is crash-safe by construction: a CA missing now is created in this pass,
// and the leaves it will sign wait for a later pass that reads it back, so a leaf is only ever
// signed by a CA as stored in its Secret, and a crash between the two writes leaves a CA and no
// leaf, which the next pass completes.
func PlanManaged(cas []CASpec, leaves []LeafSpec, observed map[string]Observed, now time.Time) Plan {
	var p Plan
	usable := map[string]*x509.Certificate{}
	for _, ca := range cas {
		o, ok := observed[ca.Secret]
		if !ok {
			p.Writes = append(p.Writes, Write{Kind: WriteCA, Secret: ca.Secret, Create: true, CommonName: ca.CommonName, Reason: "the CA does not exist"})
			continue
		}
		cert, problem := usableCA(ca.Secret, o.Material, now)
		if problem != "" {
			p.Problems = append(p.Problems, Problem{Secret: ca.Secret, Key: CertKey, Severity: SeverityInvalid, Message: problem + caFix(ca.Secret, leaves)})
			continue
		}
		usable[ca.Secret] = cert
	}
	for _, l := range leaves {
		o, exists := observed[l.Secret]
		if !exists {
			p.Missing = append(p.Missing, l.Secret)
		}
		caCert := usable[l.CA]
		if caCert == nil {
			continue
		}
		w := Write{Kind: WriteLeaf, Secret: l.Secret, Create: !exists, Signer: l.CA, SignerVersion: observed[l.CA].ResourceVersion,
			Request: l.Want.Request(LeafValidity)}
		if exists {
			reason, at := leafDue(o.Material, observed[l.CA].Material, caCert, l.Want, now)
			if reason == "" {
				if p.NextRenewal.IsZero() || at.Before(p.NextRenewal) {
					p.NextRenewal = at
				}
				continue
			}
			w.Reason = reason
		} else {
			w.Reason = "the Secret does not exist"
		}
		p.Writes = append(p.Writes, w)
	}
	slices.Sort(p.Missing)
	return p
}

// usableCA returns the CA certificate of a CA Secret, or why it cannot sign.
func usableCA(secret string, m *Material, now time.Time) (*x509.Certificate, string) {
	prefix := "Secret " + secret + ", "
	for _, f := range m.Faults {
		switch f.Kind {
		case FaultMissing:
			return nil, prefix + "key " + f.Key + ": missing"
		case FaultUnparsable:
			return nil, prefix + "key " + f.Key + ": not PEM (" + f.Detail + ")"
		case FaultKeyMismatch:
			return nil, prefix + "key " + KeyKey + ": not the private key of the CA certificate in " + CertKey
		}
	}
	cert := m.Leaf()
	switch {
	case !cert.IsCA:
		return nil, prefix + "key " + CertKey + ": not a CA certificate"
	case !now.Before(cert.NotAfter):
		return nil, prefix + "key " + CertKey + ": the CA expired at " + cert.NotAfter.UTC().Format(time.RFC3339) + " (CA rotation is not built yet)"
	case !slices.ContainsFunc(m.CAs, func(c *x509.Certificate) bool { return bytes.Equal(c.Raw, cert.Raw) }):
		return nil, prefix + "key " + CAKey + ": does not hold the CA certificate of " + CertKey
	}
	return cert, ""
}

// caFix says how to recover from an unusable CA Secret.
func caFix(secret string, leaves []LeafSpec) string {
	var signed []string
	for _, l := range leaves {
		if l.CA == secret {
			signed = append(signed, l.Secret)
		}
	}
	return fmt.Sprintf("; the operator never replaces a CA Secret by itself (every member would restart and every client would lose trust): "+
		"restore it, or delete it together with %s to have new ones issued", strings.Join(signed, ", "))
}

// leafDue says why an existing leaf Secret must be written again, or when it falls due.
func leafDue(m, caMaterial *Material, ca *x509.Certificate, want Requirement, now time.Time) (string, time.Time) {
	if m.Fault(CertKey) != nil || m.Fault(KeyKey) != nil {
		return "its certificate or key is missing, unreadable or mismatched", time.Time{}
	}
	if m.CADigest != caMaterial.CADigest {
		// ca.crt enters every member's template hash: it changes only when the CA's
		// bundle does, never with a leaf's renewal.
		return "its ca.crt differs from the CA's trust bundle", time.Time{}
	}
	r := DecideRenewal(m.Leaf(), ca, want, now)
	if r.Due {
		return r.Reason, time.Time{}
	}
	return "", r.At
}
