package pki

import (
	"crypto/x509"
	"slices"
	"strings"
	"time"
)

// CARotationDwell is how long the old CA stays in a bundle after the last leaf was re-issued
// by the new one (docs/tls.md, "CA rotation"; docs/design/timings.md). Members mount the leaf
// Secrets, and the kubelet refreshes a mounted Secret within its sync period plus its cache's
// lifetime, about a minute by default: until it did, a member still presents the old CA's leaf,
// which its peers must keep trusting.
const CARotationDwell = 2 * time.Minute

// CAStep is one step of a CA rotation on an existing CA Secret (docs/tls.md, "CA rotation").
type CAStep int

// Steps, in the order a rotation takes them. Each is one write of the CA Secret, made at the
// resourceVersion it was decided on.
const (
	// CAStepImport adds to ca.crt the CAs of the user's Secrets a move to managed TLS takes its
	// first leaves from: the start of step 1 of a move.
	CAStepImport CAStep = iota + 1
	// CAStepStage issues the new CA into next.crt and next.key and adds it to ca.crt, beside
	// the CA that signs: step 1. Every leaf's ca.crt follows, and the members restart.
	CAStepStage
	// CAStepPromote makes the staged CA the one that signs (tls.crt, tls.key) once every member
	// trusts it; ca.crt stays as it is: step 2. Every leaf is re-issued by it next.
	CAStepPromote
	// CAStepMark records, in an annotation, when every leaf was found re-issued by the new CA:
	// the end of step 2.
	CAStepMark
	// CAStepDrop leaves only the CA that signs in ca.crt, CARotationDwell after the mark:
	// step 3. Every leaf's ca.crt follows, and the members restart once more.
	CAStepDrop
)

// String names the step in logs and Events.
func (s CAStep) String() string {
	switch s {
	case CAStepImport:
		return "import"
	case CAStepStage:
		return "stage"
	case CAStepPromote:
		return "promote"
	case CAStepMark:
		return "mark"
	case CAStepDrop:
		return "drop"
	}
	return "unknown"
}

// What each step of a rotation waits for, as the Progressing message says it.
const (
	stepTrust   = "step 1 of 3, members restart one at a time to trust the new CA beside the old one"
	stepReissue = "step 2 of 3, the certificates are re-issued by the new CA"
	stepDrop    = "step 3 of 3, the old CA leaves the bundle once the kubelet refreshed the mounted certificates; members restart once more"
)

// caState is a usable CA Secret as a pass sees it.
type caState struct {
	spec CASpec
	obs  Observed
	// signer is the CA that signs (tls.crt); next the staged one (next.crt), nil without.
	signer, next *x509.Certificate
	// writing says the CA Secret is written in this pass: its leaves wait for the next one,
	// which reads it back.
	writing bool
	// following says a leaf of the CA takes its new bundle in this pass (announced once).
	following bool
}

func (st *caState) bundle() []*x509.Certificate { return st.obs.Material.CAs }

// extra reports a bundle that trusts a CA besides the one that signs.
func (st *caState) extra() bool {
	return slices.ContainsFunc(st.bundle(), func(c *x509.Certificate) bool { return !c.Equal(st.signer) })
}

// loadNext takes the staged CA, or says why it cannot. Deleting next.crt and next.key abandons
// a rotation at step 1: the staged CA is then an extra CA of the bundle, dropped like an old
// one, while the CA that signs stays.
func (st *caState) loadNext() string {
	n := st.obs.Next
	if n == nil {
		return ""
	}
	what := ""
	switch {
	case n.Fault(CertKey) != nil:
		what = "key " + NextCertKey + ": missing or not PEM"
	case n.Fault(KeyKey) != nil:
		what = "key " + NextKeyKey + ": missing, not PEM, or not the private key of " + NextCertKey
	case !n.Leaf().IsCA:
		what = "key " + NextCertKey + ": not a CA certificate"
	case !holds(st.bundle(), n.Leaf()):
		what = "key " + CAKey + ": does not hold the staged CA of " + NextCertKey
	default:
		st.next = n.Leaf()
		return ""
	}
	return "Secret " + st.spec.Secret + ", " + what + "; the CA rotation is halted: delete " + NextCertKey + " and " + NextKeyKey +
		" to abandon it (the CA in " + CertKey + " keeps signing)"
}

// rotate takes the next step of the CA's rotation, or says which it waits in, or starts one
// when it is due (docs/tls.md, "CA rotation").
func (p *Plan) rotate(st *caState, in ManagedInput) {
	if st.obs.Next != nil && st.next == nil {
		return // halted on a staged CA it cannot use: planCA reported it
	}
	leaves := leavesOf(st.spec.Secret, in.Leaves)
	if w, ok := st.importTrust(leaves, in); ok {
		p.caWrite(st, w, stepTrust)
		return
	}
	lv := st.leafViews(leaves, in)
	switch {
	case st.next != nil && lv.current && in.Rotation.TrustLoaded:
		p.caWrite(st, Write{Step: CAStepPromote, Reason: "every member trusts the new CA: it signs from now on"}, stepReissue)
	case st.next != nil:
		p.rotating(st, stepTrust)
	case st.extra():
		p.retire(st, lv, in)
	default:
		p.startIfDue(st, in)
	}
}

// retire takes a bundle with a CA besides the one that signs down to that one: once every
// member trusts the signer and every leaf is its, and the kubelet had time to mount them.
func (p *Plan) retire(st *caState, lv leafView, in ManagedInput) {
	switch {
	case !lv.current || !in.Rotation.TrustLoaded:
		p.rotating(st, stepTrust)
	case !lv.signed:
		p.rotating(st, stepReissue)
	case st.obs.ReissuedAt.IsZero():
		p.caWrite(st, Write{Step: CAStepMark, Reason: "every certificate is signed by the new CA"}, stepDrop)
	default:
		at := st.obs.ReissuedAt
		if lv.latest.After(at) {
			at = lv.latest
		}
		if at = at.Add(in.Rotation.Dwell); in.Now.Before(at) {
			p.rotating(st, stepDrop)
			p.dueBy(at)
			return
		}
		p.caWrite(st, Write{Step: CAStepDrop, Bundle: TrustBundle(st.signer), Reason: "every member has presented the new CA's certificates for " +
			in.Rotation.Dwell.String()}, stepDrop)
	}
}

// startIfDue stages a new CA when the rotate-ca value is one the CA has not rotated for, or the
// CA is in its last third (RenewAt: year 6 and 8 months of 10), which leaves years to finish a
// rotation that stalls; otherwise it asks for a pass when the CA falls due.
func (p *Plan) startIfDue(st *caState, in ManagedInput) {
	token := in.Rotation.Token
	requested := token != "" && token != st.obs.Token
	due := RenewAt(st.signer)
	if !requested && in.Now.Before(due) {
		p.dueBy(due)
		return
	}
	reason := "the CA is two thirds into its lifetime"
	if requested {
		reason = "the cluster's rotate-ca annotation asks for it"
	}
	if token == "" {
		token = st.obs.Token
	}
	p.caWrite(st, Write{Step: CAStepStage, Token: token, CommonName: st.spec.CommonName, Reason: reason}, stepTrust)
}

// caWrite plans a write of the CA Secret, which holds its leaves back until the next pass.
func (p *Plan) caWrite(st *caState, w Write, step string) {
	w.Kind, w.Secret, w.Version = WriteCAUpdate, st.spec.Secret, st.obs.ResourceVersion
	p.Writes = append(p.Writes, w)
	st.writing = true
	p.rotating(st, step)
}

func (p *Plan) rotating(st *caState, step string) {
	p.Rotating = append(p.Rotating, "CA rotation of Secret "+st.spec.Secret+": "+step)
}

// follows announces that the CA's leaves take its new bundle: their ca.crt is in the members'
// template hash, so the members restart next, and until they have, the cluster is still
// rotating, also in the pass after the CA's last step, which has nothing else to announce.
func (p *Plan) follows(st *caState) {
	if !st.following && !slices.ContainsFunc(p.Rotating, func(r string) bool { return strings.HasPrefix(r, "CA rotation of Secret "+st.spec.Secret+":") }) {
		p.rotating(st, "its certificates take the new bundle, then the members restart with it")
	}
	st.following = true
}

// importTrust is the write that adds to the CA's bundle the CAs of the user's Secrets a move to
// managed TLS takes its first leaves from (docs/tls.md, "Moving to managed certificates"), when
// the bundle lacks one. A source whose certificate the CA signs is done with: its CAs are left
// to the rotation, which drops them.
func (st *caState) importTrust(leaves []LeafSpec, in ManagedInput) (Write, bool) {
	var add []*x509.Certificate
	var from []string
	for _, l := range leaves {
		o, ok := in.Observed[in.Sources[l.Secret]]
		if !ok || o.Material == nil || (o.Material.Leaf() != nil && signedBy(o.Material.Leaf(), st.signer)) {
			continue
		}
		for _, c := range o.Material.CAs {
			if !holds(st.bundle(), c) && !holds(add, c) {
				add = append(add, c)
				from = append(from, in.Sources[l.Secret])
			}
		}
	}
	if len(add) == 0 {
		return Write{}, false
	}
	slices.Sort(from)
	return Write{Step: CAStepImport, Bundle: TrustBundle(append(slices.Clone(st.bundle()), add...)...),
		Reason: "a move to managed TLS keeps trusting the CA of Secret " + strings.Join(slices.Compact(from), ", ")}, true
}

// importable returns the user's Secret a move takes a leaf's first certificate from, or why it
// cannot: the members that still mount it must keep being shown that very certificate.
func (st *caState) importable(src string, in ManagedInput) (Observed, string) {
	o, ok := in.Observed[src]
	prefix := "Secret " + src + " (the certificate a move to managed TLS keeps serving until every member trusts the managed CA)"
	switch {
	case !ok:
		return o, prefix + " does not exist; restore it: the members still mount it"
	case o.Material.Fault(CertKey) != nil || o.Material.Fault(KeyKey) != nil:
		return o, prefix + ", keys " + CertKey + " and " + KeyKey + ": missing, not PEM or not a pair; restore them"
	case !verifies(o.Material, st.bundle(), in.Now):
		return o, prefix + ", key " + CertKey + ": does not verify against the CAs of its " + CAKey + "; fix the Secret"
	}
	return o, ""
}

// leafDecision is what becomes of an existing leaf: written for reason (keeping its certificate
// and key when keep), held until the members trust its signer, or left until at.
type leafDecision struct {
	reason     string
	keep, hold bool
	at         time.Time
}

// leafDue decides about an existing leaf. A leaf whose ca.crt differs from its CA's bundle gets
// the bundle, keeping its certificate when the bundle trusts it (a rotation's steps 1 and 3: the
// members are shown the same certificate, only their trust changes). A leaf the signer did not
// sign is re-issued by it, but while the bundle trusts the leaf and some member may not trust the
// signer yet, it waits (step 2 of a rotation, and of a move, starts once the members restarted).
func (st *caState) leafDue(m *Material, want Requirement, in ManagedInput) leafDecision {
	if m.Fault(CertKey) != nil || m.Fault(KeyKey) != nil {
		return leafDecision{reason: "its certificate or key is missing, unreadable or mismatched"}
	}
	trusted := verifies(m, st.bundle(), in.Now)
	if m.CADigest != st.obs.Material.CADigest {
		// ca.crt enters every member's template hash: it changes only when the CA's
		// bundle does, never with a leaf's renewal.
		return leafDecision{reason: "its ca.crt differs from the CA's trust bundle", keep: trusted}
	}
	if !signedBy(m.Leaf(), st.signer) && trusted && !in.Rotation.TrustLoaded {
		return leafDecision{hold: true}
	}
	r := DecideRenewal(m.Leaf(), st.signer, want, in.Now)
	if r.Due {
		return leafDecision{reason: r.Reason}
	}
	return leafDecision{at: r.At}
}

// leafView is what a rotation needs of a CA's leaves: all exist, readable, with the CA's bundle
// (current); all also signed by the CA that signs (signed); when the last of those was issued.
type leafView struct {
	current, signed bool
	latest          time.Time
}

func (st *caState) leafViews(leaves []LeafSpec, in ManagedInput) leafView {
	v := leafView{current: true, signed: true}
	for _, l := range leaves {
		o, ok := in.Observed[l.Secret]
		if !ok || o.Material.Fault(CertKey) != nil || o.Material.Fault(KeyKey) != nil || o.Material.CADigest != st.obs.Material.CADigest {
			v.current, v.signed = false, false
			continue
		}
		leaf := o.Material.Leaf()
		if !signedBy(leaf, st.signer) {
			v.signed = false
			continue
		}
		// The operator issues with a validity that starts backdate before the moment of issue.
		if at := leaf.NotBefore.Add(backdate); at.After(v.latest) {
			v.latest = at
		}
	}
	return v
}

// leavesOf are the leaves ca signs.
func leavesOf(ca string, leaves []LeafSpec) []LeafSpec {
	var out []LeafSpec
	for _, l := range leaves {
		if l.CA == ca {
			out = append(out, l)
		}
	}
	return out
}

// verifies reports whether m's certificate, with the intermediates that follow it in tls.crt,
// chains to one of cas at now, whatever its usages.
func verifies(m *Material, cas []*x509.Certificate, now time.Time) bool {
	if m.Leaf() == nil || len(cas) == 0 {
		return false
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	for _, c := range m.Certs[1:] {
		inter.AddCert(c)
	}
	_, err := m.Leaf().Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil
}
