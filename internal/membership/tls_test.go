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
