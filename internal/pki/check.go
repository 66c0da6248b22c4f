package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Expiry thresholds of the certificates users bring (docs/tls.md, "Validation of your own
// certificates").
const (
	// ExpiryDegraded: a certificate that expires sooner makes the cluster Degraded.
	ExpiryDegraded = 7 * 24 * time.Hour
	// ExpiryWarning: a certificate that expires sooner is announced by a Warning Event.
	ExpiryWarning = 30 * 24 * time.Hour
)

// Severity says what a problem with a certificate does to the cluster.
type Severity int

// Severities, mildest first.
const (
	// SeverityWarning: the certificate expires within ExpiryWarning. A Warning Event, nothing
	// else.
	SeverityWarning Severity = iota + 1
	// SeverityDegraded: the certificate expires within ExpiryDegraded. Degraded=True, but new
	// members still start: a member started with a certificate that is valid works until it
	// expires, and holding a replacement back would only make the cluster weaker meanwhile.
	SeverityDegraded
	// SeverityInvalid: the certificate cannot work now, or cannot work for a new member.
	// Degraded=True, and no new member starts until it is fixed.
	SeverityInvalid
)

// Problem is one thing wrong with a TLS Secret.
type Problem struct {
	Secret, Key string
	Severity    Severity
	// Message names the Secret and the key, says what is wrong and what fixes it. It is
	// deterministic: it quotes fixed dates, never a remaining duration.
	Message string
	// Certificate is the SHA-256 fingerprint of the certificate an expiry problem is about,
	// so that it is announced once however many passes see it; empty for other problems.
	Certificate string
}

// HostCheck is one name a certificate must cover.
type HostCheck struct {
	// Host is the name checked, as a client dials it.
	Host string
	// What says what the name is, for example "a new member's name".
	What string
	// SAN is the subject alternative name that would cover it, offered as the fix.
	SAN string
}

// Expectation is what one TLS Secret a cluster references must hold.
type Expectation struct {
	Secret string
	// Role names the certificate in messages: "server", "peer", "operator client".
	Role   string
	Hosts  []HostCheck
	Usages []x509.ExtKeyUsage
	// NeedCA says this Secret must have ca.crt.
	NeedCA bool
	// TrustedBy names the Secret whose ca.crt must verify this certificate: the Secret itself
	// for the server and peer certificates, the server Secret for the operator's client
	// certificate (that ca.crt is etcd's --trusted-ca-file).
	TrustedBy string
}

// Check judges the parsed Secrets against what the cluster expects of them, at now. A Secret
// absent from secrets is skipped: a missing Secret is reported on its own. Problems come in the
// order of exps, and for each Secret in the order the checks run.
func Check(exps []Expectation, secrets map[string]*Material, now time.Time) []Problem {
	var out []Problem
	for _, e := range exps {
		m := secrets[e.Secret]
		if m == nil {
			continue
		}
		out = append(out, checkFaults(e, m)...)
		leaf := m.Leaf()
		if leaf == nil {
			continue
		}
		out = append(out, checkValidity(e, leaf, now)...)
		out = append(out, checkUsages(e, leaf)...)
		out = append(out, checkHosts(e, leaf)...)
		if trust := secrets[e.TrustedBy]; trust != nil && len(trust.CAs) > 0 {
			out = append(out, checkChain(e, m, trust.CAs, now)...)
		}
	}
	return out
}

func invalid(e Expectation, key, format string, args ...any) Problem {
	return Problem{Secret: e.Secret, Key: key, Severity: SeverityInvalid,
		Message: fmt.Sprintf("Secret %s, key %s: ", e.Secret, key) + fmt.Sprintf(format, args...)}
}

// checkFaults reports missing and unparsable keys, and a key that is not the certificate's.
func checkFaults(e Expectation, m *Material) []Problem {
	var out []Problem
	for _, f := range m.Faults {
		if f.Key == CAKey && !e.NeedCA {
			continue
		}
		switch f.Kind {
		case FaultMissing:
			out = append(out, invalid(e, f.Key, "missing; %s", missingFix(e, f.Key)))
		case FaultUnparsable:
			what := "certificate"
			if f.Key == KeyKey {
				what = "private key"
			}
			out = append(out, invalid(e, f.Key, "not a PEM-encoded %s (%s); write it in PEM, as the %s of the %s certificate",
				what, f.Detail, what, e.Role))
		case FaultKeyMismatch:
			out = append(out, invalid(e, f.Key, "not the private key of the certificate in %s; put a certificate and its own key into the Secret together", CertKey))
		}
	}
	return out
}

func missingFix(e Expectation, key string) string {
	switch key {
	case CertKey:
		return fmt.Sprintf("add the %s certificate in PEM, followed by any intermediate CA certificates", e.Role)
	case KeyKey:
		return fmt.Sprintf("add the %s certificate's private key in PEM", e.Role)
	default:
		return fmt.Sprintf("add the PEM bundle of the CA certificates that verify the %s certificates (and, under mutual TLS, the operator's client certificate)", e.Role)
	}
}

// checkValidity reports a certificate not valid yet, expired, or expiring soon. The dates are
// the certificate's own, so the message does not change from one pass to the next.
func checkValidity(e Expectation, leaf *x509.Certificate, now time.Time) []Problem {
	date := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	left := leaf.NotAfter.Sub(now)
	var p Problem
	switch {
	case now.Before(leaf.NotBefore):
		return []Problem{invalid(e, CertKey, "the %s certificate is not valid before %s; check the clock of the machine that issued it, or wait", e.Role, date(leaf.NotBefore))}
	case left <= 0:
		return []Problem{invalid(e, CertKey, "the %s certificate expired at %s; put a renewed certificate and its key into the Secret (members pick it up without a restart)", e.Role, date(leaf.NotAfter))}
	case left < ExpiryDegraded:
		p = invalid(e, CertKey, "the %s certificate expires at %s, in less than %d days; renew it now (members pick it up without a restart)", e.Role, date(leaf.NotAfter), int(ExpiryDegraded.Hours()/24))
		p.Severity = SeverityDegraded
	case left < ExpiryWarning:
		p = invalid(e, CertKey, "the %s certificate expires at %s, in less than %d days; renew it (members pick it up without a restart)", e.Role, date(leaf.NotAfter), int(ExpiryWarning.Hours()/24))
		p.Severity = SeverityWarning
	default:
		return nil
	}
	p.Certificate = Fingerprint(leaf)
	return []Problem{p}
}

// checkUsages reports missing extended key usages. A certificate without the extension may be
// used for anything (RFC 5280), as Go's verifier, and so etcd, treats it.
func checkUsages(e Expectation, leaf *x509.Certificate) []Problem {
	if len(leaf.ExtKeyUsage) == 0 && len(leaf.UnknownExtKeyUsage) == 0 || slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny) {
		return nil
	}
	var missing []string
	for _, u := range e.Usages {
		if !slices.Contains(leaf.ExtKeyUsage, u) {
			missing = append(missing, usageName(u))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	want := make([]string, 0, len(e.Usages))
	for _, u := range e.Usages {
		want = append(want, usageName(u))
	}
	return []Problem{invalid(e, CertKey, "the %s certificate lacks the extended key usage %s; issue it with %s",
		e.Role, strings.Join(missing, " and "), strings.Join(want, " and "))}
}

func usageName(u x509.ExtKeyUsage) string {
	switch u {
	case x509.ExtKeyUsageServerAuth:
		return "serverAuth"
	case x509.ExtKeyUsageClientAuth:
		return "clientAuth"
	}
	return fmt.Sprintf("usage %d", u)
}

// checkHosts reports names the certificate does not cover, as a client dialling them would
// find.
func checkHosts(e Expectation, leaf *x509.Certificate) []Problem {
	var out []Problem
	for _, h := range e.Hosts {
		if leaf.VerifyHostname(h.Host) != nil {
			out = append(out, invalid(e, CertKey, "the %s certificate does not cover %s (%s); add the subject alternative name %s",
				e.Role, h.What, h.Host, h.SAN))
		}
	}
	return out
}

// checkChain reports a certificate that does not chain to a CA in the trusting Secret's
// ca.crt. The chain is verified at a moment the leaf itself is valid, so that an expired leaf
// is reported once, as expired, and not a second time here.
func checkChain(e Expectation, m *Material, cas []*x509.Certificate, now time.Time) []Problem {
	leaf := m.Leaf()
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	for _, c := range m.Certs[1:] {
		inter.AddCert(c)
	}
	at := now
	if at.Before(leaf.NotBefore) {
		at = leaf.NotBefore
	}
	if at.After(leaf.NotAfter) {
		at = leaf.NotAfter
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err == nil {
		return nil
	}
	var unknown x509.UnknownAuthorityError
	var bad x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown):
		return []Problem{invalid(e, CertKey, "the %s certificate is not signed by a CA in ca.crt of Secret %s; add the CA that signed it to that ca.crt, or issue the certificate from a CA there",
			e.Role, e.TrustedBy)}
	case errors.As(err, &bad) && bad.Reason == x509.Expired:
		return []Problem{invalid(e, CertKey, "a CA certificate that verifies the %s certificate (in ca.crt of Secret %s, or an intermediate in %s) has expired or is not valid yet; renew that CA and the certificates it signed",
			e.Role, e.TrustedBy, CertKey)}
	default:
		return []Problem{invalid(e, CertKey, "the %s certificate does not verify against ca.crt of Secret %s (%v); issue it from a CA in that ca.crt", e.Role, e.TrustedBy, err)}
	}
}
