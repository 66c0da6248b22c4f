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
	// Next is, in a CA Secret, the CA a rotation stages beside the one that signs (keys
	// next.crt and next.key, parsed as tls.crt and tls.key); nil without.
	Next *Material
	// Token is, in a CA Secret, the last rotate-ca value it was created under or rotated for.
	Token string
	// ReissuedAt is, in a CA Secret, when every leaf it signs was found re-issued by its new CA
	// (the end of step 2 of a rotation); zero without.
	ReissuedAt time.Time
}

// WriteKind is what a write issues.
type WriteKind int

// Kinds of writes.
const (
	// WriteCA creates a CA Secret. An existing CA Secret is never replaced.
	WriteCA WriteKind = iota + 1
	// WriteLeaf creates a leaf Secret or replaces its data.
	WriteLeaf
	// WriteCAUpdate takes one step of a CA rotation on an existing CA Secret (Write.Step).
	WriteCAUpdate
)

// Write is one managed Secret to write.
type Write struct {
	Kind   WriteKind
	Secret string
	// Create says the Secret does not exist; otherwise its data is replaced.
	Create bool
	// Reason says why, for logs and Events.
	Reason string
	// CommonName is a CA's subject (WriteCA, and the new CA of CAStepStage).
	CommonName string
	// Signer is the CA Secret that signs a leaf, and SignerVersion the resourceVersion of it
	// the decision was taken on: the leaf must be signed by that CA and no other, and carry that
	// bundle, so the executor refuses to write when the Secret it reads has another version.
	Signer, SignerVersion string
	// Request is what a leaf says (WriteLeaf).
	Request LeafRequest
	// Source is the Secret whose tls.crt and tls.key a leaf keeps instead of a new certificate:
	// the leaf itself when only its ca.crt follows the CA's bundle, or the user's Secret a move
	// to managed TLS takes the first certificate from. SourceVersion is the resourceVersion of
	// it the decision was taken on. Empty: the leaf is issued anew.
	Source, SourceVersion string
	// Step is what a WriteCAUpdate does, and Version the CA Secret's resourceVersion it was
	// decided on.
	Step    CAStep
	Version string
	// Bundle is the ca.crt a CAStepImport or CAStepDrop leaves.
	Bundle []byte
	// Token is the rotate-ca value a CA Secret records (WriteCA, CAStepStage).
	Token string
}

// Plan is which managed Secrets a pass writes, and what it learnt doing so.
type Plan struct {
	// Writes are the Secrets to write, every CA before any leaf.
	Writes []Write
	// Missing names the leaf Secrets that do not exist yet, sorted: nothing that starts etcd
	// may go ahead until they do.
	Missing []string
	// Problems are CA Secrets the operator cannot use (it never replaces one by itself), and
	// Secrets a move to managed TLS cannot take its first certificates from.
	Problems []Problem
	// NextRenewal is when the certificates want a pass next: the earliest leaf not written now
	// falls due, a CA enters its rotation window, or a rotation's wait ends; zero when none.
	NextRenewal time.Time
	// Rotating says, for each CA under rotation, which step runs, in the order of the CAs.
	Rotating []string
}

// ManagedInput is what PlanManaged decides over.
type ManagedInput struct {
	CAs    []CASpec
	Leaves []LeafSpec
	// Observed are the managed Secrets, and the Sources, as the pass read them.
	Observed map[string]Observed
	// Sources maps a leaf Secret to the Secret of the user's that a move to managed TLS takes
	// its first certificate and key from, and whose CAs the CA's bundle imports (docs/tls.md,
	// "Moving to managed certificates"). Absent when nothing moves.
	Sources map[string]string
	Now     time.Time
	// Rotation is what the CA rotation decides over besides the Secrets.
	Rotation Rotation
}

// Rotation is what the CA rotation (docs/tls.md, "CA rotation") decides over besides the
// Secrets.
type Rotation struct {
	// Token is the EtcdCluster's rotate-ca value; "" without. A CA that has not recorded it
	// rotates.
	Token string
	// TrustLoaded says every member mounts the cluster's managed Secrets and every member Pod
	// runs the CA bundles they hold now. Only then may a CA some member did not trust at its
	// start sign a certificate members are shown, or a CA be dropped from a bundle.
	TrustLoaded bool
	// Dwell is how long after the last leaf was re-issued the old CA stays trusted, so that the
	// kubelet refreshed every mounted copy of the leaves first.
	Dwell time.Duration
}

// PlanManaged decides which managed Secrets to write (docs/tls.md, "Operator-managed
// certificates" and "CA rotation"). It is crash-safe by construction: every write is planned
// over Secrets as stored, a Secret written in a pass is only read back by the next one (a CA
// created or changed now signs nothing in this pass), so a crash between any two writes leaves
// a state the next pass plans from, and no write ever leaves a leaf signed by a CA its bundle
// does not hold, or a bundle without the signer of a leaf that is still served.
func PlanManaged(in ManagedInput) Plan {
	var p Plan
	cas := map[string]*caState{}
	for _, spec := range in.CAs {
		if st := p.planCA(spec, in); st != nil {
			cas[spec.Secret] = st
		}
	}
	for _, l := range in.Leaves {
		o, exists := in.Observed[l.Secret]
		if !exists {
			p.Missing = append(p.Missing, l.Secret)
		}
		if st := cas[l.CA]; st != nil && !st.writing {
			p.planLeaf(l, st, o, exists, in)
		}
	}
	slices.Sort(p.Missing)
	return p
}

// planCA decides about one CA Secret: create it, report it unusable, or take the next step of
// its rotation. It returns the CA's state when the CA exists and is usable.
func (p *Plan) planCA(spec CASpec, in ManagedInput) *caState {
	o, ok := in.Observed[spec.Secret]
	if !ok {
		p.Writes = append(p.Writes, Write{Kind: WriteCA, Secret: spec.Secret, Create: true, CommonName: spec.CommonName,
			Token: in.Rotation.Token, Reason: "the CA does not exist"})
		return nil
	}
	cert, problem := usableCA(spec.Secret, o.Material, in.Now)
	if problem != "" {
		p.Problems = append(p.Problems, Problem{Secret: spec.Secret, Key: CertKey, Severity: SeverityInvalid, Message: problem + caFix(spec.Secret, in.Leaves)})
		return nil
	}
	st := &caState{spec: spec, obs: o, signer: cert}
	if problem := st.loadNext(); problem != "" {
		p.Problems = append(p.Problems, Problem{Secret: spec.Secret, Key: NextCertKey, Severity: SeverityDegraded, Message: problem})
	}
	p.rotate(st, in)
	return st
}

// planLeaf decides about one leaf Secret of a usable CA that is not written in this pass.
func (p *Plan) planLeaf(l LeafSpec, st *caState, o Observed, exists bool, in ManagedInput) {
	w := Write{Kind: WriteLeaf, Secret: l.Secret, Create: !exists, Signer: st.spec.Secret, SignerVersion: st.obs.ResourceVersion,
		Request: l.Want.Request(LeafValidity)}
	if !exists {
		w.Reason = "the Secret does not exist"
		if src, ok := in.Sources[l.Secret]; ok {
			so, problem := st.importable(src, in)
			if problem != "" {
				p.Problems = append(p.Problems, Problem{Secret: src, Key: CertKey, Severity: SeverityInvalid, Message: problem})
				return
			}
			w.Source, w.SourceVersion = src, so.ResourceVersion
			w.Reason = "a move to managed TLS keeps the certificate of Secret " + src + " until every member trusts the managed CA"
		}
		p.Writes = append(p.Writes, w)
		return
	}
	d := st.leafDue(o.Material, l.Want, in)
	switch {
	case d.hold:
	case d.reason == "":
		p.dueBy(d.at)
	default:
		w.Reason = d.reason
		if d.keep {
			w.Source, w.SourceVersion = l.Secret, o.ResourceVersion
			p.follows(st)
		}
		p.Writes = append(p.Writes, w)
	}
}

// dueBy lowers NextRenewal to at.
func (p *Plan) dueBy(at time.Time) {
	if !at.IsZero() && (p.NextRenewal.IsZero() || at.Before(p.NextRenewal)) {
		p.NextRenewal = at
	}
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
		// A managed CA rotates in its last third (docs/tls.md, "CA rotation"): one that
		// expired was brought by the user, or the operator was not running for years.
		return nil, prefix + "key " + CertKey + ": the CA expired at " + cert.NotAfter.UTC().Format(time.RFC3339) + ", so every certificate it signed has too"
	case !holds(m.CAs, cert):
		return nil, prefix + "key " + CAKey + ": does not hold the CA certificate of " + CertKey
	}
	return cert, ""
}

// holds reports whether certs holds c, by DER bytes.
func holds(certs []*x509.Certificate, c *x509.Certificate) bool {
	return slices.ContainsFunc(certs, func(h *x509.Certificate) bool { return bytes.Equal(h.Raw, c.Raw) })
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
