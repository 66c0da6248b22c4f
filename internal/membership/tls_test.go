package membership

import (
	"strings"
	"testing"
	"time"
)

// TestNextHoldsWhatWouldStartEtcdWithoutTLS: while spec.tls material is missing, nothing that
// leads to an etcd process is done (docs/design/membership-flows.md, "Bootstrap"), everything else is, and the pass looks
// again after a fixed interval.
func TestNextHoldsWhatWouldStartEtcdWithoutTLS(t *testing.T) {
	t.Parallel()
	noCertManager := TLS{CertManagerMissing: true, MissingSecrets: []string{"c-peer-tls", "c-server-tls"}}
	invalid := TLS{Certificates: []CertificateProblem{{Message: "Secret byo, key ca.crt: missing", Holds: true}}}
	expiring := TLS{Certificates: []CertificateProblem{{Message: "Secret byo, key tls.crt: expires soon"}}}
	pending := with(mem("p", 4), func(m *Member) { m.Pending, m.PodRunning, m.PodReady, m.Ready = true, false, false, false })
	cases := []struct {
		name      string
		scope     func() Scope
		tls       TLS
		wantKind  Kind
		wantAfter time.Duration
	}{
		{"seed not created without cert-manager", func() Scope { return Scope{Target: 3} }, noCertManager, KindWait, TLSSecretWait},
		{"seed not created without its Secret", func() Scope { return Scope{Target: 1} }, TLS{MissingSecrets: []string{"byo"}}, KindWait, TLSSecretWait},
		{"only cert-manager missing: re-probe interval", func() Scope { return Scope{Target: 1} }, TLS{CertManagerMissing: true}, KindWait, CertManagerReprobe},
		{"seed not given its initial cluster", func() Scope {
			return Scope{Target: 1, Members: []Member{with(mem("s", 1), func(m *Member) { m.Bootstrap, m.Pending = true, true })}}
		}, noCertManager, KindWait, TLSSecretWait},
		{"no member created on scale-up", func() Scope { s := steady3(); s.Target = 5; return s }, TLS{MissingSecrets: []string{"byo"}}, KindWait, TLSSecretWait},
		{"no learner added", func() Scope {
			s := steady3()
			s.Target = 4
			s.Members = append(s.Members, pending)
			return s
		}, TLS{MissingSecrets: []string{"byo"}}, KindWait, TLSSecretWait},
		{"scale-down goes ahead", func() Scope { s := steady3(); s.Target = 2; return s }, TLS{MissingSecrets: []string{"byo"}}, KindRemove, TLSSecretWait},
		{"converged: nothing to do, look again", steady3, TLS{MissingSecrets: []string{"byo"}}, KindNone, TLSSecretWait},
		{"nothing missing: untouched", func() Scope { return Scope{Target: 3} }, TLS{}, KindCreateSeed, 0},
		{"seed not created with an invalid certificate", func() Scope { return Scope{Target: 1} }, invalid, KindWait, TLSSecretWait},
		{"no member created on scale-up with an invalid certificate", func() Scope { s := steady3(); s.Target = 5; return s }, invalid, KindWait, TLSSecretWait},
		{"scale-down goes ahead with an invalid certificate", func() Scope { s := steady3(); s.Target = 2; return s }, invalid, KindRemove, TLSSecretWait},
		{"a certificate expiring soon holds nothing", func() Scope { return Scope{Target: 3} }, expiring, KindCreateSeed, 0},
		{"seed waits for the operator's own certificates", func() Scope { return Scope{Target: 3} }, TLS{Issuing: []string{"c-peer-tls"}}, KindWait, TLSSecretWait},
		{"no roll restart onto Secrets still being issued", rolling3, TLS{Issuing: []string{"c-peer-tls"}}, KindWait, TLSSecretWait},
		{"no roll restart with an invalid certificate", rolling3, invalid, KindWait, TLSSecretWait},
		{"a rotation holds nothing", rolling3, TLS{Rotating: []string{"CA rotation of Secret c-ca: step 1 of 3"}}, KindAuthorise, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := c.scope()
			s.TLS = c.tls
			got := Next(s)
			if got.Kind != c.wantKind || got.RequeueAfter != c.wantAfter {
				t.Fatalf("Next = %+v, want %s after %s", got, c.wantKind, c.wantAfter)
			}
			if c.wantKind == KindWait && !strings.Contains(got.Message, tlsProblem(c.tls)) {
				t.Errorf("message %q does not say what is missing (%q)", got.Message, tlsProblem(c.tls))
			}
		})
	}
}

func TestTLSMessages(t *testing.T) {
	t.Parallel()
	if got, want := tlsProblem(TLS{CertManagerMissing: true, MissingSecrets: []string{"a", "b"}}),
		"cert-manager is not installed; Secrets a, b do not exist"; got != want {
		t.Errorf("tlsProblem = %q, want %q", got, want)
	}
	if got, want := tlsSecretMessage(TLS{MissingSecrets: []string{"etcd-server-tls"}}),
		"TLS Secret etcd-server-tls does not exist; no member Pod is started without it (looked for again every 10s)"; got != want {
		t.Errorf("tlsSecretMessage = %q, want %q", got, want)
	}
	msg := certManagerMessage()
	for _, part := range []string{"install cert-manager", "Secret references", "every 60s"} {
		if !strings.Contains(msg, part) {
			t.Errorf("CertManagerNotInstalled message %q does not say %q", msg, part)
		}
	}
}

func TestCertificateMessages(t *testing.T) {
	t.Parallel()
	both := TLS{Certificates: []CertificateProblem{{Message: "Secret a, key ca.crt: missing; add it", Holds: true}, {Message: "Secret b, key tls.crt: expires soon"}}}
	if got, want := certificateMessage(both),
		"Secret a, key ca.crt: missing; add it; Secret b, key tls.crt: expires soon; no new member is started until fixed (looked at again every 10s)"; got != want {
		t.Errorf("certificateMessage = %q, want %q", got, want)
	}
	if got, want := certificateMessage(TLS{Certificates: both.Certificates[1:]}), "Secret b, key tls.crt: expires soon"; got != want {
		t.Errorf("certificateMessage of a warning = %q, want %q", got, want)
	}
	if got, want := tlsProblem(TLS{Certificates: both.Certificates, Issuing: []string{"c-ca"}}),
		"a certificate is invalid (condition Degraded, reason CertificateInvalid, says which and how to fix it); the operator is issuing c-ca"; got != want {
		t.Errorf("tlsProblem = %q, want %q", got, want)
	}
}

// TestTLSMovingIsNotCurrent: a member still on the user's Secrets after a move to managed TLS is
// not current, even once the in-place fields the pass writes reach it, so a roll moves it.
func TestTLSMovingIsNotCurrent(t *testing.T) {
	t.Parallel()
	s := steady3() // a leads: b is restarted first
	s.Members[1] = with(s.Members[1], func(m *Member) {
		m.TLSMoving, m.TemplateCurrent = true, false
		m.WantHash, m.AuthorisedHash, m.PodHash = "managed", "own", "own"
	})
	if Converged(&s) {
		t.Error("a cluster with a member on the user's Secrets converged")
	}
	if a := Next(s); a.Kind != KindAuthorise || a.Member != s.Members[1].Name || !a.Disrupts || a.Hash != "managed" {
		t.Errorf("Next = %+v, want a restart of %s", a, s.Members[1].Name)
	}
}
