package pki

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

// This file is a small world for the managed planner: Secrets as the API server stores them
// (resourceVersions included), written through the same Render functions the executor uses, and
// members that mount the leaf Secrets, restart one at a time onto what they hold, and present
// the certificates the kubelet last mounted. After every single write it checks that every
// connection still works.

// kubeletLag is how long after a leaf's write a member may still present the certificate it
// replaced: below CARotationDwell, as the kubelet's refresh is.
const kubeletLag = time.Minute

type simSecret struct {
	rv     int
	stored Stored
}

// simMember is one etcd member: whether it mounts the managed Secrets yet (a move), what it
// trusts, by CA Secret, as loaded at its last start, the digests of the ca.crt it started with,
// and how often its trust changed.
type simMember struct {
	moved   bool
	trust   map[string][]*x509.Certificate
	digests map[string]string
	rolls   int
}

// lagged is a certificate a leaf Secret no longer holds that members may still present.
type lagged struct {
	leaf  string
	cert  *x509.Certificate
	until time.Time
}

type sim struct {
	t       *testing.T
	now     time.Time
	rv      int
	secrets map[string]*simSecret
	token   string
	// sources are the user's Secrets a move takes the first leaves from; given to the planner
	// while a member does not mount the managed Secrets yet.
	sources map[string]string
	members []*simMember
	lagging []lagged
	// steps are the CA rotation steps taken, "secret step", in order, and when.
	steps   []string
	stepsAt []time.Time
	// rotating are the distinct Rotating messages the passes planned.
	rotating []string
}

// newSim is a world of n members on complete managed Secrets: CAs issued at caAt, leaves at
// at, which is the world's clock.
func newSim(t *testing.T, n int, caAt, at time.Time) *sim {
	t.Helper()
	s := &sim{t: t, now: at, secrets: map[string]*simSecret{}}
	for _, spec := range managedCAs {
		st, err := RenderCA(Write{CommonName: spec.CommonName}, caAt)
		if err != nil {
			t.Fatal(err)
		}
		s.put(spec.Secret, st)
	}
	for _, l := range managedLeaves {
		data, err := RenderLeaf(Write{Request: l.Want.Request(LeafValidity)}, s.secrets[l.CA].stored, nil, at)
		if err != nil {
			t.Fatal(err)
		}
		s.put(l.Secret, Stored{Data: data})
	}
	for range n {
		m := &simMember{moved: true}
		m.load(s, "c-server-tls", "c-peer-tls")
		m.rolls = 0
		s.members = append(s.members, m)
	}
	return s
}

func (s *sim) put(name string, st Stored) {
	s.rv++
	s.secrets[name] = &simSecret{rv: s.rv, stored: st}
}

func (s *sim) material(name string) *Material {
	m := Parse(s.secrets[name].stored.Data)
	return &m
}

// load starts the member on the ca.crt of the Secrets it mounts.
func (m *simMember) load(s *sim, server, peer string) {
	trust := map[string][]*x509.Certificate{"c-ca": s.material(server).CAs, "c-peer-ca": s.material(peer).CAs}
	digests := map[string]string{"c-ca": s.material(server).CADigest, "c-peer-ca": s.material(peer).CADigest}
	if m.trust != nil && (!sameCerts(m.trust["c-ca"], trust["c-ca"]) || !sameCerts(m.trust["c-peer-ca"], trust["c-peer-ca"])) {
		m.rolls++
	}
	m.trust, m.digests = trust, digests
}

func sameCerts(a, b []*x509.Certificate) bool {
	return slices.EqualFunc(a, b, func(x, y *x509.Certificate) bool { return x.Equal(y) })
}

// trustLoaded is what the controller computes: every member mounts the managed Secrets and
// started on the ca.crt they hold now.
func (s *sim) trustLoaded() bool {
	for _, m := range s.members {
		if !m.moved || !s.exists("c-server-tls") || !s.exists("c-peer-tls") ||
			m.digests["c-ca"] != s.material("c-server-tls").CADigest || m.digests["c-peer-ca"] != s.material("c-peer-tls").CADigest {
			return false
		}
	}
	return true
}

func (s *sim) exists(name string) bool { _, ok := s.secrets[name]; return ok }

func (s *sim) input() ManagedInput {
	in := ManagedInput{CAs: managedCAs, Leaves: managedLeaves, Observed: map[string]Observed{}, Now: s.now,
		Rotation: Rotation{Token: s.token, TrustLoaded: s.trustLoaded(), Dwell: CARotationDwell}}
	for name, sec := range s.secrets {
		m := Parse(sec.stored.Data)
		in.Observed[name] = Observed{ResourceVersion: strconv.Itoa(sec.rv), Material: &m, Next: ParseNext(sec.stored.Data),
			Token: sec.stored.Token, ReissuedAt: sec.stored.ReissuedAt}
	}
	if slices.ContainsFunc(s.members, func(m *simMember) bool { return !m.moved }) {
		in.Sources = s.sources
	}
	return in
}

// apply writes w as the executor does, refusing it as a conflict when a Secret it was planned
// over changed.
func (s *sim) apply(w Write) bool {
	cur, exists := s.secrets[w.Secret]
	at := func(name, version string) (*Stored, bool) {
		sec, ok := s.secrets[name]
		if !ok || strconv.Itoa(sec.rv) != version {
			return nil, false
		}
		return &sec.stored, true
	}
	var next Stored
	var err error
	switch w.Kind {
	case WriteCA:
		if exists {
			return false
		}
		next, err = RenderCA(w, s.now)
	case WriteCAUpdate:
		st, ok := at(w.Secret, w.Version)
		if !ok {
			return false
		}
		next, err = RenderCAUpdate(w, *st, s.now)
		s.steps, s.stepsAt = append(s.steps, w.Secret+" "+w.Step.String()), append(s.stepsAt, s.now)
	case WriteLeaf:
		signer, ok := at(w.Signer, w.SignerVersion)
		var src *Stored
		if w.Source != "" {
			src, ok = at(w.Source, w.SourceVersion)
		}
		if !ok || w.Create == exists {
			return false
		}
		next.Data, err = RenderLeaf(w, *signer, src, s.now)
	}
	if err != nil {
		s.t.Fatalf("rendering %+v: %v", w, err)
	}
	if exists && w.Kind == WriteLeaf && !bytes.Equal(cur.stored.Data[CertKey], next.Data[CertKey]) {
		s.lagging = append(s.lagging, lagged{leaf: w.Secret, cert: s.material(w.Secret).Leaf(), until: s.now.Add(kubeletLag)})
	}
	s.put(w.Secret, next)
	return true
}

// pass plans once and applies at most limit of the writes (all when limit < 0): fewer is a
// crash after the last one applied. It checks the world after every write.
func (s *sim) pass(limit int) (Plan, int) {
	p := PlanManaged(s.input())
	for _, w := range p.Writes {
		// A leaf that takes its CA's new bundle restarts every member (its ca.crt is in their
		// template hash): a pass announcing no rotation then would let the cluster say
		// Reconciled right before its members restart.
		if w.Kind == WriteLeaf && w.Source == w.Secret && len(p.Rotating) == 0 {
			s.t.Errorf("at %s %s takes a new bundle while the plan announces no rotation", s.now.Format(time.TimeOnly), w.Secret)
		}
	}
	for _, r := range p.Rotating {
		if !slices.Contains(s.rotating, r) {
			s.rotating = append(s.rotating, r)
		}
	}
	n := 0
	for _, w := range p.Writes {
		if n == limit || !s.apply(w) {
			break
		}
		n++
		s.check(fmt.Sprintf("after writing %s (%s)", w.Secret, w.Reason))
	}
	return p, n
}

// run passes until the world is idle: nothing written, nothing rotating, every member on the
// bundles. A pass that writes nothing restarts one member whose trust is behind (as the roll
// does, one member per pass), or else lets time run. limit(i) is pass i's write limit.
func (s *sim) run(limit func(int) int) {
	s.t.Helper()
	for i := range 1000 {
		p, n := s.pass(limit(i))
		switch {
		case n > 0:
			s.now = s.now.Add(time.Second)
		case len(p.Missing) == 0 && len(p.Problems) == 0 && s.rollOne():
			s.now = s.now.Add(time.Second)
			s.check("after a restart")
		case len(p.Rotating) == 0 && len(p.Writes) == 0:
			return
		default:
			s.now = s.now.Add(10 * time.Second)
		}
	}
	s.t.Fatal("the world did not settle in 1000 passes")
}

// rollOne restarts the first member not on the current managed Secrets.
func (s *sim) rollOne() bool {
	for _, m := range s.members {
		if !m.moved || m.digests["c-ca"] != s.material("c-server-tls").CADigest || m.digests["c-peer-ca"] != s.material("c-peer-tls").CADigest {
			m.moved = true
			m.load(s, "c-server-tls", "c-peer-tls")
			return true
		}
	}
	return false
}

// presented are the certificates members present for a role: the leaf they mount (the user's
// Secret before a move reached them) and those it replaced that the kubelet may not have
// refreshed yet.
func (s *sim) presented(leaf, byo string) []*x509.Certificate {
	var out []*x509.Certificate
	for _, m := range s.members {
		switch {
		case !m.moved && s.exists(byo):
			out = append(out, s.material(byo).Leaf())
		case s.exists(leaf):
			out = append(out, s.material(leaf).Leaf())
		}
	}
	for _, l := range s.lagging {
		if l.leaf == leaf && s.now.Before(l.until) {
			out = append(out, l.cert)
		}
	}
	return out
}

// check fails the test when a connection would fail: a leaf Secret whose certificate its own
// ca.crt does not trust, a peer certificate some member does not trust, the operator's client
// certificate some member does not trust, or a server certificate the operator does not.
func (s *sim) check(when string) {
	s.t.Helper()
	for _, l := range managedLeaves {
		if s.exists(l.Secret) && !verifies(s.material(l.Secret), s.material(l.Secret).CAs, s.now) {
			s.t.Fatalf("%s: the certificate of %s is not trusted by its own ca.crt", when, l.Secret)
		}
	}
	for i, m := range s.members {
		for _, c := range s.presented("c-peer-tls", "byo-peer") {
			if !verifies(&Material{Certs: []*x509.Certificate{c}}, m.trust["c-peer-ca"], s.now) {
				s.t.Fatalf("%s: member %d does not trust a peer certificate of %s", when, i, c.Issuer.CommonName)
			}
		}
		if s.exists("c-operator-client-tls") && !verifies(s.material("c-operator-client-tls"), m.trust["c-ca"], s.now) {
			s.t.Fatalf("%s: member %d does not trust the operator's client certificate", when, i)
		}
	}
	if s.exists("c-server-tls") {
		for _, c := range s.presented("c-server-tls", "byo-server") {
			if !verifies(&Material{Certs: []*x509.Certificate{c}}, s.material("c-server-tls").CAs, s.now) {
				s.t.Fatalf("%s: the operator does not trust a server certificate of %s", when, c.Issuer.CommonName)
			}
		}
	}
}

// signerOf is the CA certificate of CA Secret ca.
func (s *sim) signerOf(ca string) *x509.Certificate { return s.material(ca).Leaf() }
