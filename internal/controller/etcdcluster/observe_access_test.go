package etcdcluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// oneClient is a Clients that hands out one recorder for every cluster.
type oneClient struct{ rec *etcdfake.Recorder }

func (c oneClient) Get(context.Context, string, etcdclient.Config) (etcdAPI, error) {
	return c.rec, nil
}
func (c oneClient) Forget(string) error           { return nil }
func (c oneClient) Pooled(string) (etcdAPI, bool) { return c.rec, true }

// authWorld is a Reconciler whose etcd is rec.
type authWorld struct {
	r   *Reconciler
	rec *etcdfake.Recorder
}

func newAuthWorld(rec *etcdfake.Recorder) *authWorld {
	r := New(nil, nil, events.NewFakeRecorder(10), nil)
	r.etcd = oneClient{rec: rec}
	return &authWorld{r: r, rec: rec}
}

// observation is a fresh observation of a formed one-member cluster whose member's Pod runs,
// before etcd was asked; restore gives the cluster spec.bootstrap.restore, auth gives it
// spec.auth.
func (w *authWorld) observation(restore, auth bool) *observation {
	a := member("a", false)
	a.Status.IsVoter, a.Status.MemberID = true, etcdclient.FormatID(1)
	o := testObservation(w.rec, a)
	o.etcd, o.etcdClient = membership.Etcd{}, nil
	o.pods = map[string]*corev1.Pod{"a": {Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}}
	if restore {
		o.cluster.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{}}
	}
	if auth {
		o.cluster.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "root"}}
	}
	return o
}

// pass observes etcd once and returns the access the planner would see and the AuthStatus calls
// the pass made.
func (w *authWorld) pass(t *testing.T, restore, auth bool) (membership.Access, int) {
	t.Helper()
	before := w.rec.Count(etcdfake.AuthEnabled)
	o := w.observation(restore, auth)
	w.r.observeEtcd(t.Context(), o)
	return o.accessScope(), w.rec.Count(etcdfake.AuthEnabled) - before
}

func authRequired() error { return etcdclient.NewError("MemberList", etcdclient.ErrAuthRequired) }

// TestUnaskedAuthIsProbedOnlyWithReason: a cluster without spec.auth is asked whether auth is
// on only when restored from a snapshot; an ordinary cluster costs no AuthStatus (served
// through raft) on any pass.
func TestUnaskedAuthIsProbedOnlyWithReason(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a.c.ns.svc:2380"}}}, Auth: true}
	w := newAuthWorld(rec)
	for range 3 {
		if a, probes := w.pass(t, false, false); probes != 0 || a.AuthRequiredNotConfigured {
			t.Fatalf("ordinary cluster: %d AuthStatus calls, access %+v; want none and no finding", probes, a)
		}
	}
	a, probes := w.pass(t, true, false)
	if probes != 1 || !a.AuthRequiredNotConfigured {
		t.Fatalf("restored cluster, etcd with auth on (answering MemberList, as etcd before 3.5.28 does): %d probes, access %+v", probes, a)
	}
	rec.Auth = false
	if a, probes := newAuthWorld(rec).pass(t, true, false); probes != 1 || a.AuthRequiredNotConfigured {
		t.Fatalf("restored cluster, auth off: %d probes, access %+v", probes, a)
	}
}

// TestRefusedMemberListIsAuthRequired: etcd refusing MemberList for want of credentials is auth
// on, known in the same pass, and not a lost quorum (no member is asked about itself). The
// suspicion makes later passes probe, until a probe finds auth off.
func TestRefusedMemberListIsAuthRequired(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a.c.ns.svc:2380"}}}, Auth: true}
	rec.SetError(etcdfake.MemberList, authRequired())
	w := newAuthWorld(rec)
	a, probes := w.pass(t, false, false)
	if !a.AuthRequiredNotConfigured || probes != 0 {
		t.Fatalf("MemberList refused: access %+v, %d probes; want AuthRequiredNotConfigured without a probe", a, probes)
	}
	if n := rec.Count(etcdfake.LocalMemberList); n != 0 {
		t.Errorf("LocalMemberList calls = %d: a refusal for credentials was taken for a lost quorum", n)
	}
	if a, probes := w.pass(t, false, false); !a.AuthRequiredNotConfigured || probes != 1 {
		t.Fatalf("next pass: access %+v, %d probes; want it probed and still found", a, probes)
	}
	// Someone turned auth off with etcdctl: the probe clears the suspicion.
	rec.SetError(etcdfake.MemberList, nil)
	rec.Auth = false
	if a, probes := w.pass(t, false, false); a.AuthRequiredNotConfigured || probes != 1 {
		t.Fatalf("auth turned off: access %+v, %d probes", a, probes)
	}
	if _, probes := w.pass(t, false, false); probes != 0 {
		t.Fatalf("after a probe found auth off: %d probes, want none", probes)
	}
}

// TestRefusalWithSpecAuthIsNotAuthRequired: a cluster whose spec asks for auth has its own path
// (the latch and root's session); a refusal there is not AuthRequiredNotConfigured.
func TestRefusalWithSpecAuthIsNotAuthRequired(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a.c.ns.svc:2380"}}}}
	rec.SetError(etcdfake.MemberList, authRequired())
	w := newAuthWorld(rec)
	o := w.observation(true, true)
	w.r.observeEtcd(t.Context(), o)
	if o.access.authRequired || w.r.memory.authSuspected(o.key()) {
		t.Fatalf("spec.auth set: authRequired %v, suspected %v", o.access.authRequired, w.r.memory.authSuspected(o.key()))
	}
}

// TestRefusedChangeMakesTheNextPassProbe: an etcd that answers MemberList without credentials
// (before 3.5.28) refuses only the change; the executor notes it, and the next pass asks.
func TestRefusedChangeMakesTheNextPassProbe(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a.c.ns.svc:2380"}}}, Auth: true}
	rec.SetError(etcdfake.MemberAddAsLearner, etcdclient.NewError("MemberAddAsLearner", etcdclient.ErrAuthRequired))
	o := joiningObservation(rec)
	x, _ := testExecutor(o)
	if x.plan.Action.Kind != membership.KindJoin {
		t.Fatalf("planned %s, want a Join", x.plan.Action.Kind)
	}
	if _, err := x.act(t.Context()); err == nil {
		t.Fatal("a refused add returned no error")
	}
	if !x.memory.authSuspected(o.key()) {
		t.Fatal("the refusal was not noted")
	}
	w := &authWorld{r: New(nil, nil, events.NewFakeRecorder(10), nil), rec: rec}
	w.r.etcd, w.r.memory = oneClient{rec: rec}, x.memory
	if a, probes := w.pass(t, false, false); !a.AuthRequiredNotConfigured || probes != 1 {
		t.Fatalf("the pass after the refusal: access %+v, %d probes", a, probes)
	}
}
