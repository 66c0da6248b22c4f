package membership

import (
	"fmt"
	"strings"
	"time"
)

// TLS is what a pass found missing of the TLS material spec.tls asks for (docs/design/membership-flows.md, "Waiting for TLS material").
// The zero value means nothing is missing, or the cluster asks for no TLS.
type TLS struct {
	// CertManagerMissing says spec.tls asks for certificates from cert-manager and the API
	// server does not serve cert-manager.io/v1 Certificates.
	CertManagerMissing bool
	// MissingSecrets names the TLS Secrets the cluster references (its own, or the ones
	// cert-manager is to issue) that do not exist, sorted.
	MissingSecrets []string
	// Certificates are what is wrong with the certificates in the Secrets that exist
	// (docs/tls.md, "Validation of your own certificates"; an unusable managed CA), each
	// naming the Secret, the key and the fix, in a fixed order.
	Certificates []CertificateProblem
	// Issuing names the managed Secrets that do not exist yet, which the operator issues
	// itself (docs/tls.md, "Operator-managed certificates"), sorted. Not a fault: nothing
	// waits for a person.
	Issuing []string
	// Rotating says which step each managed CA under rotation is at (docs/tls.md, "CA
	// rotation"), in a fixed order. Not a fault either.
	Rotating []string
}

// CertificateProblem is one thing wrong with a certificate in a TLS Secret.
type CertificateProblem struct {
	// Message names the Secret, the key, what is wrong and the fix.
	Message string
	// Holds says no new etcd may start with it: the certificate cannot work now, or not for
	// a new member. A certificate that merely expires soon does not hold: a member started
	// with it works until it expires.
	Holds bool
}

// Missing reports whether any TLS material is missing.
func (t TLS) Missing() bool { return t.CertManagerMissing || len(t.MissingSecrets) > 0 }

// Invalid reports whether a certificate problem holds new members back.
func (t TLS) Invalid() bool {
	for _, p := range t.Certificates {
		if p.Holds {
			return true
		}
	}
	return false
}

// held reports whether nothing that starts etcd may go ahead.
func (t TLS) held() bool { return t.Missing() || t.Invalid() || len(t.Issuing) > 0 }

// Requeue intervals while TLS material is missing (docs/design/membership-flows.md, "Waiting for TLS material"; docs/design/timings.md). Both are fixed, not an
// exponential back-off: the fix is a person's (create the Secret, install cert-manager), and it
// should take effect promptly however long the cluster waited.
const (
	// TLSSecretWait is how soon a pass looks again for a missing TLS Secret. Secrets are read
	// uncached and by name (no Secret informer), so no watch reports their creation.
	TLSSecretWait = 10 * time.Second
	// CertManagerReprobe is how long an answer to "does the API server serve cert-manager?"
	// is trusted before discovery is asked again, so installing cert-manager needs no operator
	// restart.
	CertManagerReprobe = 60 * time.Second
)

// Reasons of the TLS conditions (docs/design/conditions-and-events.md).
const (
	ReasonCertManagerNotInstalled = "CertManagerNotInstalled"
	ReasonTLSSecretMissing        = "TLSSecretMissing"
	// ReasonRotatingCA: Progressing while a managed CA rotates and nothing else is under way.
	ReasonRotatingCA = "RotatingCA"
)

// startsEtcd reports whether an action leads to an etcd process starting: a member created or
// woken, a seed given its initial cluster, a learner added (its Pod starts next).
func startsEtcd(k Kind) bool {
	switch k {
	case KindCreateSeed, KindInitSeed, KindCreateMember, KindJoin, KindWake:
		return true
	}
	return false
}

// holdForTLS keeps a from starting etcd while TLS material is missing or a certificate is
// invalid: a member must never serve in plaintext what the spec asks to be TLS, a member whose
// certificate does not cover its name or is not trusted by its peers cannot join, and a learner
// added to etcd whose Pod cannot start or join would block every later add (etcd admits one
// learner). A roll's restart starts etcd too, on Secrets that may be the ones missing (a move to
// managed TLS restarts members onto Secrets the operator is still issuing). Removals, promotions
// and leadership moves need no new process and go ahead. Either way the pass looks again after
// a fixed interval, because nothing the operator watches changes when a Secret appears or
// changes, or cert-manager is installed.
func holdForTLS(s *Scope, a Action) Action {
	if !s.TLS.held() {
		return a
	}
	wait := CertManagerReprobe
	if len(s.TLS.MissingSecrets) > 0 || s.TLS.Invalid() || len(s.TLS.Issuing) > 0 {
		wait = TLSSecretWait
	}
	if !startsEtcd(a.Kind) && (a.Kind != KindAuthorise || !a.Disrupts) {
		if a.RequeueAfter == 0 || a.RequeueAfter > wait {
			a.RequeueAfter = wait
		}
		return a
	}
	return Action{Kind: KindWait, Member: a.Member, Reason: a.Reason, RequeueAfter: wait,
		Message: fmt.Sprintf("%s once the TLS material is in place: %s", a.Message, tlsProblem(s.TLS))}
}

// tlsProblem says what is missing, deterministically.
func tlsProblem(t TLS) string {
	var parts []string
	if t.CertManagerMissing {
		parts = append(parts, "cert-manager is not installed")
	}
	switch len(t.MissingSecrets) {
	case 0:
	case 1:
		parts = append(parts, "Secret "+t.MissingSecrets[0]+" does not exist")
	default:
		parts = append(parts, "Secrets "+strings.Join(t.MissingSecrets, ", ")+" do not exist")
	}
	if t.Invalid() {
		parts = append(parts, "a certificate is invalid (condition Degraded, reason "+ReasonCertificateInvalid+", says which and how to fix it)")
	}
	if len(t.Issuing) > 0 {
		parts = append(parts, "the operator is issuing "+strings.Join(t.Issuing, ", "))
	}
	return strings.Join(parts, "; ")
}

// certManagerMessage is the Available=False/CertManagerNotInstalled message.
func certManagerMessage() string {
	return fmt.Sprintf("spec.tls asks for certificates from cert-manager, but the API server does not serve cert-manager.io/v1 Certificates: "+
		"install cert-manager, or recreate the cluster with Secret references (tls.client.serverSecretRef, tls.peer.secretRef; spec.tls is immutable); "+
		"no member starts until then, and the operator looks again every %ds", int(CertManagerReprobe.Seconds()))
}

// tlsSecretMessage is the Degraded=True/TLSSecretMissing message.
func tlsSecretMessage(t TLS) string {
	what := "TLS Secret " + t.MissingSecrets[0] + " does not exist; no member Pod is started without it"
	if len(t.MissingSecrets) > 1 {
		what = "TLS Secrets " + strings.Join(t.MissingSecrets, ", ") + " do not exist; no member Pod is started without them"
	}
	return fmt.Sprintf("%s (looked for again every %ds)", what, int(TLSSecretWait.Seconds()))
}

// certificateMessage is the Degraded=True/CertificateInvalid message: every problem, in order.
func certificateMessage(t TLS) string {
	msgs := make([]string, 0, len(t.Certificates))
	for _, p := range t.Certificates {
		msgs = append(msgs, p.Message)
	}
	what := strings.Join(msgs, "; ")
	if t.Invalid() {
		return fmt.Sprintf("%s; no new member is started until fixed (looked at again every %ds)", what, int(TLSSecretWait.Seconds()))
	}
	return what
}
