package pki

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	managedCAs    = []CASpec{{Secret: "c-ca", CommonName: "c CA"}, {Secret: "c-peer-ca", CommonName: "c peer CA"}}
	peerReq       = Requirement{CommonName: "c-peer", DNSNames: []string{"*.c.ns.svc"}, Usages: serverUsages}
	clientReq     = Requirement{CommonName: "root", Usages: clientUsages}
	managedLeaves = []LeafSpec{leafSpec("c-server-tls", "c-ca", serverWant), leafSpec("c-peer-tls", "c-peer-ca", peerReq),
		leafSpec("c-operator-client-tls", "c-ca", clientReq)}
)

// leafSpec names a leaf Secret, its CA Secret and what it says.
func leafSpec(secret, ca string, want Requirement) LeafSpec {
	return LeafSpec{Secret: secret, CA: ca, Want: want}
}

// world is a set of managed Secrets as a pass would observe them, built by really issuing
// them.
type world struct {
	t        *testing.T
	cas      map[string]*CA
	observed map[string]Observed
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return &world{t: t, cas: map[string]*CA{}, observed: map[string]Observed{}}
}

func (w *world) ca(secret string, at time.Time) {
	ca, kp := testCA(w.t, secret, at)
	w.cas[secret] = ca
	w.observed[secret] = Observed{ResourceVersion: "rv-" + secret, Material: parsed(map[string][]byte{CertKey: kp.Cert, KeyKey: kp.Key, CAKey: TrustBundle(ca.Cert)})}
}

func (w *world) leaf(secret, signer string, want Requirement, validity time.Duration, at time.Time) {
	kp := issue(w.t, w.cas[signer], want.Request(validity), at)
	w.observed[secret] = Observed{ResourceVersion: "rv-" + secret, Material: parsed(secretData(kp, TrustBundle(w.cas[signer].Cert)))}
}

// input is the planner's input over the world at now: no rotation asked for, members on the
// current bundles.
func (w *world) input(now time.Time) ManagedInput {
	return ManagedInput{CAs: managedCAs, Leaves: managedLeaves, Observed: w.observed, Now: now,
		Rotation: Rotation{TrustLoaded: true, Dwell: CARotationDwell}}
}

// complete issues both CAs and the three leaves at at.
func (w *world) complete(at time.Time) *world {
	w.ca("c-ca", at)
	w.ca("c-peer-ca", at)
	for _, l := range managedLeaves {
		w.leaf(l.Secret, l.CA, l.Want, LeafValidity, at)
	}
	return w
}

// summary is a plan's writes as "kind secret create reason" lines.
func summary(p Plan) []string {
	var out []string
	for _, w := range p.Writes {
		kind := map[WriteKind]string{WriteCA: "ca", WriteLeaf: "leaf"}[w.Kind]
		verb := "replace"
		if w.Create {
			verb = "create"
		}
		out = append(out, kind+" "+w.Secret+" "+verb)
	}
	return out
}

// TestPlanManaged is the managed planner on a fixed clock, from nothing to renewals.
func TestPlanManaged(t *testing.T) {
	t.Parallel()
	dueAt := func(at time.Time) time.Time { return at.Add(-backdate).Add((LeafValidity + backdate) / 3 * 2) }
	// A CA issued at t0 enters its rotation window two thirds into its 10 years.
	caDue := t0.Add(-backdate).Add((CAValidity + backdate) / 3 * 2)
	cases := []struct {
		name        string
		world       func(w *world)
		now         time.Time
		writes      []string
		missing     []string
		next        time.Time
		problemSays string
	}{
		{"nothing yet: the CAs first, the leaves wait for them", func(*world) {}, t0,
			[]string{"ca c-ca create", "ca c-peer-ca create"}, []string{"c-operator-client-tls", "c-peer-tls", "c-server-tls"}, time.Time{}, ""},
		{"CAs stored: the leaves are signed by them", func(w *world) { w.ca("c-ca", t0); w.ca("c-peer-ca", t0) }, t0,
			[]string{"leaf c-server-tls create", "leaf c-peer-tls create", "leaf c-operator-client-tls create"},
			[]string{"c-operator-client-tls", "c-peer-tls", "c-server-tls"}, caDue, ""},
		{"one CA stored: only its leaves", func(w *world) { w.ca("c-peer-ca", t0) }, t0,
			[]string{"ca c-ca create", "leaf c-peer-tls create"}, []string{"c-operator-client-tls", "c-peer-tls", "c-server-tls"}, caDue, ""},
		{"everything fresh: nothing, next renewal at two thirds", func(w *world) { w.complete(t0) }, t0.Add(time.Hour), nil, nil, dueAt(t0), ""},
		{"one leaf older: the next renewal is its", func(w *world) {
			w.complete(t0)
			w.leaf("c-peer-tls", "c-peer-ca", peerReq, LeafValidity, t0.Add(-10*24*time.Hour))
		}, t0, nil, nil, dueAt(t0.Add(-10 * 24 * time.Hour)), ""},
		{"two thirds in: every leaf renewed, no CA touched", func(w *world) { w.complete(t0) }, dueAt(t0),
			[]string{"leaf c-server-tls replace", "leaf c-peer-tls replace", "leaf c-operator-client-tls replace"}, nil, caDue, ""},
		{"a leaf written short: renewed alone", func(w *world) {
			w.complete(t0)
			w.leaf("c-server-tls", "c-ca", serverWant, time.Hour, t0)
		}, t0.Add(50 * time.Minute), []string{"leaf c-server-tls replace"}, nil, dueAt(t0), ""},
		{"a leaf signed by the other CA: renewed", func(w *world) {
			w.complete(t0)
			w.leaf("c-operator-client-tls", "c-peer-ca", clientReq, LeafValidity, t0)
		}, t0, []string{"leaf c-operator-client-tls replace"}, nil, dueAt(t0), ""},
		{"a leaf whose key was lost: rewritten", func(w *world) {
			w.complete(t0)
			m := *w.observed["c-peer-tls"].Material
			m.Faults = []Fault{{Key: KeyKey, Kind: FaultMissing}}
			w.observed["c-peer-tls"] = Observed{Material: &m}
		}, t0, []string{"leaf c-peer-tls replace"}, nil, dueAt(t0), ""},
		{"an unusable CA: reported, never replaced, its leaves left alone", func(w *world) {
			w.complete(t0)
			m := *w.observed["c-ca"].Material
			m.Faults = []Fault{{Key: KeyKey, Kind: FaultMissing}}
			w.observed["c-ca"] = Observed{Material: &m}
			delete(w.observed, "c-server-tls")
		}, dueAt(t0), []string{"leaf c-peer-tls replace"}, []string{"c-server-tls"}, caDue,
			"Secret c-ca, key tls.key: missing; the operator never replaces a CA Secret by itself (every member would restart and every client would lose trust): restore it, or delete it together with c-server-tls, c-operator-client-tls to have new ones issued"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			c.world(w)
			p := PlanManaged(w.input(c.now))
			if got := summary(p); !slices.Equal(got, c.writes) {
				t.Errorf("writes %q, want %q", got, c.writes)
			}
			if !slices.Equal(p.Missing, c.missing) {
				t.Errorf("missing %q, want %q", p.Missing, c.missing)
			}
			if !p.NextRenewal.Equal(c.next) {
				t.Errorf("next renewal %s, want %s", p.NextRenewal, c.next)
			}
			switch {
			case c.problemSays == "" && len(p.Problems) > 0:
				t.Errorf("problems %+v", p.Problems)
			case c.problemSays != "" && (len(p.Problems) != 1 || !strings.Contains(p.Problems[0].Message, c.problemSays)):
				t.Errorf("problems %+v, want one saying %q", p.Problems, c.problemSays)
			}
			for _, wr := range p.Writes {
				if wr.Kind == WriteLeaf && (wr.SignerVersion != "rv-"+wr.Signer || wr.Request.Validity != LeafValidity) {
					t.Errorf("leaf %s: signer %s@%s validity %s", wr.Secret, wr.Signer, wr.SignerVersion, wr.Request.Validity)
				}
			}
		})
	}
}

// TestPlanManagedFollowsTheCABundle: a leaf whose ca.crt is not its CA's bundle (as when the
// bundle gains a second CA) is rewritten.
func TestPlanManagedFollowsTheCABundle(t *testing.T) {
	t.Parallel()
	w := newWorld(t).complete(t0)
	m := *w.observed["c-ca"].Material
	m.CADigest = "sha256:other"
	w.observed["c-ca"] = Observed{ResourceVersion: "rv-c-ca", Material: &m}
	p := PlanManaged(w.input(t0))
	if got := summary(p); !slices.Equal(got, []string{"leaf c-server-tls replace", "leaf c-operator-client-tls replace"}) {
		t.Errorf("writes %q", got)
	}
}
