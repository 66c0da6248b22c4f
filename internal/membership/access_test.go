package membership

import (
	"strings"
	"testing"

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
