package pki

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// all applies every write of every pass.
func all(int) int { return -1 }

// firstOnly crashes every pass after its first write.
func firstOnly(int) int { return 1 }

// stepsOf are the rotation steps one CA Secret took, in order.
func stepsOf(s *sim, ca string) []string {
	var out []string
	for _, st := range s.steps {
		if name, step, _ := strings.Cut(st, " "); name == ca {
			out = append(out, step)
		}
	}
	return out
}

// checkRotated checks the end of a rotation of both CAs away from old (CA Secret → the
// fingerprint of the CA that signed before): a new CA signs, the bundle holds it alone, every leaf is its and carries the bundle,
// every member restarted exactly twice (to trust both CAs, then the new one alone), and the
// old CA was dropped no sooner than CARotationDwell after the leaves were found re-issued.
func checkRotated(t *testing.T, s *sim, old map[string]string, wantSteps []string) {
	t.Helper()
	for _, ca := range []string{"c-ca", "c-peer-ca"} {
		if got := stepsOf(s, ca); !slices.Equal(got, wantSteps) {
			t.Errorf("%s took steps %q, want %q", ca, got, wantSteps)
		}
		signer, m := s.signerOf(ca), s.material(ca)
		if Fingerprint(signer) == old[ca] || len(m.CAs) != 1 || !m.CAs[0].Equal(signer) {
			t.Errorf("%s: the old CA signs, or the bundle holds %d CAs", ca, len(m.CAs))
		}
		if s.secrets[ca].stored.Data[NextCertKey] != nil || !s.secrets[ca].stored.ReissuedAt.IsZero() {
			t.Errorf("%s keeps rotation state: %v", ca, s.secrets[ca].stored.ReissuedAt)
		}
	}
	for _, l := range managedLeaves {
		leaf := s.material(l.Secret)
		if !signedBy(leaf.Leaf(), s.signerOf(l.CA)) || leaf.CADigest != s.material(l.CA).CADigest {
			t.Errorf("%s is not the new CA's, or not on its bundle", l.Secret)
		}
	}
	for i, m := range s.members {
		if m.rolls != 2 {
			t.Errorf("member %d restarted %d times for trust, want 2", i, m.rolls)
		}
	}
	marked, dropped := slices.Index(s.steps, "c-ca mark"), slices.Index(s.steps, "c-ca drop")
	if marked < 0 || dropped < 0 || s.stepsAt[dropped].Sub(s.stepsAt[marked]) < CARotationDwell {
		t.Errorf("c-ca dropped the old CA at %v, marked at %v", s.stepsAt, s.steps)
	}
}

// signers are the fingerprints of the CAs that sign now, by CA Secret.
func signers(s *sim) map[string]string {
	return map[string]string{"c-ca": Fingerprint(s.signerOf("c-ca")), "c-peer-ca": Fingerprint(s.signerOf("c-peer-ca"))}
}

// TestRotationByToken: a new rotate-ca value rotates both CAs through the three steps of
// docs/tls.md, each Progressing message said along the way, and the same value once more does
// nothing.
func TestRotationByToken(t *testing.T) {
	t.Parallel()
	s := newSim(t, 3, t0, t0)
	old := signers(s)
	s.token = "2030-01"
	s.run(all)
	checkRotated(t, s, old, []string{"stage", "promote", "mark", "drop"})
	for _, ca := range []string{"c-ca", "c-peer-ca"} {
		if got := s.secrets[ca].stored.Token; got != "2030-01" {
			t.Errorf("%s records token %q", ca, got)
		}
		for _, step := range []string{stepTrust, stepReissue, stepDrop} {
			if msg := "CA rotation of Secret " + ca + ": " + step; !slices.Contains(s.rotating, msg) {
				t.Errorf("never said %q; said %q", msg, s.rotating)
			}
		}
	}
	n := len(s.steps)
	s.run(all)
	if len(s.steps) != n {
		t.Errorf("the same token rotated again: %q", s.steps[n:])
	}
}

// TestRotationSurvivesCrashes: a crash after any write of a pass (modelled by passes that apply
// only a prefix of their writes) leaves a world the next pass completes, and no state in between
// has a connection fail (sim.check runs after every write).
func TestRotationSurvivesCrashes(t *testing.T) {
	t.Parallel()
	for name, limit := range map[string]func(int) int{
		"after the first write of every pass":    firstOnly,
		"after a prefix that varies by the pass": func(i int) int { return 1 + (i*7+i/3)%3 },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, 3, t0, t0)
			old := signers(s)
			s.token = "x"
			s.run(limit)
			checkRotated(t, s, old, []string{"stage", "promote", "mark", "drop"})
		})
	}
}

// TestRotationWhenDue: a CA two thirds into its lifetime rotates without being asked; a younger
// one asks for a pass when it will be.
func TestRotationWhenDue(t *testing.T) {
	t.Parallel()
	caAt := t0.Add(-7 * 365 * 24 * time.Hour)
	s := newSim(t, 3, caAt, t0)
	old := signers(s)
	s.run(all)
	checkRotated(t, s, old, []string{"stage", "promote", "mark", "drop"})

	// CAs that enter their last third an hour from now.
	young := newSim(t, 1, t0.Add(-(CAValidity+backdate)/3*2).Add(backdate+time.Hour), t0)
	p := PlanManaged(young.input())
	if len(p.Writes) != 0 || len(p.Rotating) != 0 || !p.NextRenewal.Equal(t0.Add(time.Hour)) {
		t.Errorf("a young CA: writes %+v, rotating %q, next pass %s", p.Writes, p.Rotating, p.NextRenewal)
	}
}

// TestRotationToken is the token rule: a CA rotates for a rotate-ca value it has not recorded,
// records the value it rotated for (keeping the one it had when the rotation was due by age),
// and a new CA records the value it was created under.
func TestRotationToken(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		recorded, asked string
		caAt            time.Time
		stage           bool
		records         string
	}{
		{"nothing asked", "", "", t0, false, ""},
		{"a first value", "", "a", t0, true, "a"},
		{"the recorded value", "a", "a", t0, false, ""},
		{"the annotation removed", "a", "", t0, false, ""},
		{"a new value", "a", "b", t0, true, "b"},
		{"due by age, nothing asked", "a", "", t0.Add(-7 * 365 * 24 * time.Hour), true, "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, 1, c.caAt, t0)
			for _, ca := range managedCAs {
				s.secrets[ca.Secret].stored.Token = c.recorded
			}
			s.token = c.asked
			p := PlanManaged(s.input())
			var staged []Write
			for _, w := range p.Writes {
				if w.Kind == WriteCAUpdate && w.Step == CAStepStage {
					staged = append(staged, w)
				}
			}
			if c.stage != (len(staged) == 2) || (c.stage && (staged[0].Token != c.records || staged[1].Token != c.records)) {
				t.Errorf("writes %+v", p.Writes)
			}
		})
	}
	p := PlanManaged(ManagedInput{CAs: managedCAs, Leaves: managedLeaves, Now: t0, Rotation: Rotation{Token: "t"}})
	if len(p.Writes) != 2 || p.Writes[0].Kind != WriteCA || p.Writes[0].Token != "t" {
		t.Errorf("a new CA under token t: %+v", p.Writes)
	}
}

// TestRotationAbandoned: deleting next.crt and next.key during step 1 abandons the rotation:
// the CA that signed keeps signing, and the staged CA leaves the bundle like an old one.
func TestRotationAbandoned(t *testing.T) {
	t.Parallel()
	s := newSim(t, 3, t0, t0)
	old := signers(s)
	s.token = "x"
	s.pass(-1)
	for _, ca := range managedCAs {
		st := s.secrets[ca.Secret].stored
		delete(st.Data, NextCertKey)
		delete(st.Data, NextKeyKey)
		s.put(ca.Secret, st)
	}
	s.run(all)
	for _, ca := range managedCAs {
		if got := stepsOf(s, ca.Secret); !slices.Equal(got, []string{"stage", "mark", "drop"}) {
			t.Errorf("%s took %q", ca.Secret, got)
		}
		if Fingerprint(s.signerOf(ca.Secret)) != old[ca.Secret] || len(s.material(ca.Secret).CAs) != 1 {
			t.Errorf("%s: another CA signs, or the bundle kept the staged one", ca.Secret)
		}
	}
}

// TestRotationHaltedByABrokenStagedCA: a staged CA that does not parse is reported, without
// holding anything back, and the rotation waits for a person.
func TestRotationHaltedByABrokenStagedCA(t *testing.T) {
	t.Parallel()
	s := newSim(t, 1, t0, t0)
	s.token = "x"
	s.pass(-1)
	st := s.secrets["c-ca"].stored
	st.Data[NextKeyKey] = []byte("not PEM")
	s.put("c-ca", st)
	p := PlanManaged(s.input())
	if len(p.Problems) != 1 || p.Problems[0].Severity != SeverityDegraded || !strings.Contains(p.Problems[0].Message, "delete next.crt and next.key") {
		t.Errorf("problems %+v", p.Problems)
	}
	for _, w := range p.Writes {
		if w.Secret == "c-ca" {
			t.Errorf("wrote %+v", w)
		}
	}
}
