package pki

import (
	"slices"
	"testing"
	"time"
)

// newMoveSim is a world of n members on the user's own Secrets, byo-server (client CA "user
// CA") and byo-peer (peer CA "user peer CA"), which a move to managed TLS takes over: no managed
// Secret exists yet, and the members still mount the user's.
func newMoveSim(t *testing.T, n int) *sim {
	t.Helper()
	s := &sim{t: t, now: t0, secrets: map[string]*simSecret{},
		sources: map[string]string{"c-server-tls": "byo-server", "c-peer-tls": "byo-peer", "c-operator-client-tls": "byo-server"}}
	for name, c := range map[string]struct {
		ca   string
		want Requirement
	}{"byo-server": {"user CA", serverWant}, "byo-peer": {"user peer CA", peerReq}} {
		ca, kp := testCA(t, c.ca, t0.Add(-365*24*time.Hour))
		s.put(name, Stored{Data: secretData(issue(t, ca, c.want.Request(LeafValidity), t0), kp.Cert)})
	}
	for range n {
		m := &simMember{}
		m.load(s, "byo-server", "byo-peer")
		s.members = append(s.members, m)
	}
	return s
}

// TestMoveToManaged: a move from the user's Secrets creates the managed CAs, imports the user's
// CAs into their bundles, starts the leaves on the user's certificates, rolls the members onto
// them, re-issues the leaves from the managed CAs once every member trusts them, and drops the
// user's CAs; no connection fails at any write, and a crash after any write changes none of it.
func TestMoveToManaged(t *testing.T) {
	t.Parallel()
	for name, limit := range map[string]func(int) int{"every write": all, "a crash after each write": firstOnly} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newMoveSim(t, 3)
			user := map[string]string{"c-ca": Fingerprint(s.material("byo-server").CAs[0]), "c-peer-ca": Fingerprint(s.material("byo-peer").CAs[0])}
			s.run(limit)
			checkRotated(t, s, map[string]string{"c-ca": user["c-ca"], "c-peer-ca": user["c-peer-ca"]}, []string{"import", "mark", "drop"})
			for _, ca := range []string{"c-ca", "c-peer-ca"} {
				for _, c := range s.material(ca).CAs {
					if c.Subject.CommonName == "user CA" || c.Subject.CommonName == "user peer CA" {
						t.Errorf("%s still trusts %s", ca, c.Subject.CommonName)
					}
				}
			}
			if !slices.ContainsFunc(s.members, func(m *simMember) bool { return m.moved }) {
				t.Error("no member moved")
			}
		})
	}
}

// TestMoveWithoutTheUserSecret: a move whose source Secret is gone issues nothing for it and
// says what to restore, since the members that mount it must keep being shown that certificate.
func TestMoveWithoutTheUserSecret(t *testing.T) {
	t.Parallel()
	s := newMoveSim(t, 1)
	delete(s.secrets, "byo-peer")
	s.pass(-1) // the CAs
	p := PlanManaged(s.input())
	for _, w := range p.Writes {
		if w.Secret == "c-peer-tls" {
			t.Errorf("wrote %+v", w)
		}
	}
	if len(p.Problems) != 1 || p.Problems[0].Secret != "byo-peer" || p.Problems[0].Severity != SeverityInvalid {
		t.Errorf("problems %+v", p.Problems)
	}
}
