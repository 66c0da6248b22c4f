package membership

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// TestAuthIsEnabledOnceConverged: auth is turned on only on a converged cluster, once; a
// cluster still scaling up scales first.
func TestAuthIsEnabledOnceConverged(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Access = Access{AuthWanted: true}
	if a := Next(s); a.Kind != KindEnableAuth {
		t.Fatalf("converged, auth wanted: Next = %s %s, want EnableAuth", a.Kind, a.Message)
	}
	s.Access.AuthLatched = true
	if a := Next(s); a.Kind != KindNone || a.Reason != ReasonReconciled {
		t.Fatalf("auth latched: Next = %s %s, want nothing to do", a.Kind, a.Message)
	}
	growing := steady3()
	growing.Target = 5
	growing.Access = Access{AuthWanted: true}
	if a := Next(growing); a.Kind == KindEnableAuth {
		t.Fatal("auth enabled on a cluster that has not converged")
	}
	unknown := steady3()
	unknown.Etcd.Known = false
	unknown.Access = Access{AuthWanted: true}
	if a := Next(unknown); a.Kind == KindEnableAuth {
		t.Fatal("auth enabled while etcd does not answer")
	}
}

// TestAccessRepairComesFirst: a latch status missed and a rejected password with a session at
// hand are repaired ahead of everything else; a rejection without a session degrades and asks
// for a pass after AccessRetry.
func TestAccessRepairComesFirst(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Target = 5 // a scale-up waits behind the repair
	s.Access = Access{AuthWanted: true, AuthObservedOn: true}
	if a := Next(s); a.Kind != KindLatchAuth {
		t.Fatalf("auth observed on, not latched: Next = %s, want LatchAuth", a.Kind)
	}
	s.Access = Access{AuthWanted: true, AuthLatched: true, PasswordRejected: true, PreviousSession: true}
	if a := Next(s); a.Kind != KindChangePassword {
		t.Fatalf("password rejected with a session: Next = %s, want ChangePassword", a.Kind)
	}
	s = steady3()
	s.Access = Access{AuthWanted: true, AuthLatched: true, PasswordRejected: true}
	a := Next(s)
	if a.Kind == KindChangePassword || a.RequeueAfter != AccessRetry {
		t.Fatalf("password rejected without a session: Next = %s after %v, want a pass after %v", a.Kind, a.RequeueAfter, AccessRetry)
	}
	d := degraded(ConditionInput{Scope: &s, Action: a})
	if d.Reason != ReasonAuthCredentialsRejected || !strings.Contains(d.Message, "put the previous password back") {
		t.Fatalf("Degraded = %s %q", d.Reason, d.Message)
	}
}

// TestAccessProblemDegradesAndHoldsAuth: an unusable Secret is named in Degraded, auth is not
// enabled over it, and the pass comes back after AccessRetry.
func TestAccessProblemDegradesAndHoldsAuth(t *testing.T) {
	t.Parallel()
	s := steady3()
	msg := "Secret root key password is missing or empty: put root's password under the key password"
	s.Access = Access{AuthWanted: true, Problem: msg, ProblemReason: ReasonAuthSecretInvalid}
	a := Next(s)
	if a.Kind == KindEnableAuth || a.RequeueAfter != AccessRetry {
		t.Fatalf("Next = %s after %v", a.Kind, a.RequeueAfter)
	}
	d := degraded(ConditionInput{Scope: &s, Action: a})
	if d.Status != "True" || d.Reason != ReasonAuthSecretInvalid || !strings.HasPrefix(d.Message, msg) || d.Type != etcdv1alpha2.ConditionDegraded {
		t.Fatalf("Degraded = %+v", d)
	}
}

// TestAuthRequiredNotConfiguredHoldsEveryStep: while etcd has auth on that the spec does not ask
// for, no rule acts, whatever it would do otherwise (latch the cluster ID, scale either way,
// roll, or wait for etcd), and the pass comes back after AccessRetry.
func TestAuthRequiredNotConfiguredHoldsEveryStep(t *testing.T) {
	t.Parallel()
	seed := with(mem("s", 1), func(m *Member) { m.Bootstrap = true })
	cases := []struct {
		name  string
		scope func() Scope
		// would is what Next returns without auth in the way: proof that the hold holds
		// something back.
		would Kind
	}{
		{"a restored seed about to latch the cluster ID", func() Scope {
			return Scope{Target: 3, Members: []Member{seed}, Etcd: healthyEtcd(1, voter(1, "s"))}
		}, KindLatchClusterID},
		{"a scale-up", func() Scope { s := steady3(); s.Target = 5; return s }, KindCreateMember},
		{"a scale-down", func() Scope { s := steady3(); s.Target = 1; return s }, KindRemove},
		{"a pending member to join", func() Scope {
			s := steady3()
			s.Target = 4
			s.Members = append(s.Members, with(mem("d", 4), func(m *Member) { m.Pending, m.PodRunning, m.Ready, m.PodReady = true, false, false, false }))
			return s
		}, KindJoin},
		{"a roll", rolling3, KindAuthorise},
		{"etcd refusing MemberList", func() Scope { s := steady3(); s.Etcd = Etcd{}; return s }, KindWait},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := c.scope()
			if a := Next(s); a.Kind != c.would || a.Reason == ReasonAuthRequiredNotConfigured {
				t.Fatalf("without auth in the way: Next = %s/%s %q, want %s", a.Kind, a.Reason, a.Message, c.would)
			}
			s.Access.AuthRequiredNotConfigured = true
			a := Next(s)
			if a.Kind != KindWait || a.Mutates() || a.Reason != ReasonAuthRequiredNotConfigured || a.RequeueAfter != AccessRetry {
				t.Fatalf("Next = %s/%s after %v, want a Wait for AuthRequiredNotConfigured after %v", a.Kind, a.Reason, a.RequeueAfter, AccessRetry)
			}
		})
	}
}

// TestAuthRequiredNotConfiguredConditions: Available=False and Degraded=True name the reason,
// Progressing=False says nothing moves (a passed deadline does not hide it), and the message says
// what happened and the one fix, with the field to set.
func TestAuthRequiredNotConfiguredConditions(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Target = 5
	s.Access = Access{AuthRequiredNotConfigured: true}
	conds := Conditions(ConditionInput{Scope: &s, Action: Next(s), Lock: Lock{Expired: true}, Generation: 3})
	want := []struct {
		typ    string
		status metav1.ConditionStatus
	}{
		{etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse},
		{etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse},
		{etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue},
	}
	for i, w := range want {
		c := conds[i]
		if c.Type != w.typ || c.Status != w.status || c.Reason != ReasonAuthRequiredNotConfigured {
			t.Errorf("%s = %s/%s, want %s/%s", w.typ, c.Status, c.Reason, w.status, ReasonAuthRequiredNotConfigured)
		}
		for _, part := range []string{"etcd has authentication on", "restored from a snapshot", "recreate the EtcdCluster",
			"spec.auth.enabled: true", "spec.auth.rootCredentialsSecretRef.name", "root's password", "every 30s"} {
			if !strings.Contains(c.Message, part) {
				t.Errorf("%s message %q does not say %q", w.typ, c.Message, part)
			}
		}
	}
}

// TestAuthOffNeverRequiredNotConfigured: the reason comes only from etcd's answer, never from a
// spec without auth alone, nor from auth the spec asks for.
func TestAuthOffNeverRequiredNotConfigured(t *testing.T) {
	t.Parallel()
	for _, access := range []Access{{}, {AuthWanted: true}, {AuthWanted: true, AuthLatched: true}, {AuthWanted: true, AuthObservedOn: true}} {
		s := steady3()
		s.Target = 5
		s.Access = access
		a := Next(s)
		for _, c := range Conditions(ConditionInput{Scope: &s, Action: a}) {
			if c.Reason == ReasonAuthRequiredNotConfigured || a.Reason == ReasonAuthRequiredNotConfigured {
				t.Errorf("access %+v: %s = %s/%s, action %s/%s", access, c.Type, c.Status, c.Reason, a.Kind, a.Reason)
			}
		}
	}
}
