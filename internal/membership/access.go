package membership

import (
	"fmt"
	"time"
)

// Access is what a pass found about the Secrets and credentials the operator dials etcd with
// (docs/auth.md, docs/tls.md). The zero value means nothing is wrong and auth is not asked for.
type Access struct {
	// AuthWanted is spec.auth.enabled.
	AuthWanted bool
	// AuthLatched is status.authEnabled.
	AuthLatched bool
	// AuthObservedOn says etcd answered that auth is on before status latched it: a pass that
	// turned it on and ended before its status patch, or an adopted cluster.
	AuthObservedOn bool
	// Problem says what is wrong with a Secret the operator dials with, naming the Secret, the
	// key and the fix; ProblemReason is the condition reason (ReasonCertificateInvalid,
	// ReasonAuthSecretInvalid).
	Problem, ProblemReason string
	// PasswordRejected says etcd rejected root's password from the Secret.
	PasswordRejected bool
	// PreviousSession says the operator still holds a session authenticated with the password
	// it used before, through which the Secret's can be set.
	PreviousSession bool
}

// Reasons of the access conditions (docs/design/conditions-and-events.md).
const (
	ReasonCertificateInvalid      = "CertificateInvalid"
	ReasonAuthSecretInvalid       = "AuthSecretInvalid"
	ReasonAuthCredentialsRejected = "AuthCredentialsRejected"
	ReasonEnablingAuth            = "EnablingAuth"
	ReasonChangingRootPassword    = "ChangingRootPassword"
)

// AccessRetry is how soon a pass looks again at a Secret the operator cannot dial with: Secrets
// are read uncached and by name, so no watch reports the fix.
const AccessRetry = 30 * time.Second

// accessRepair returns the step that makes the operator's access to etcd match the spec again,
// ahead of every other rule but quorum recovery: a latch that status missed, or root's password
// changed to the Secret's.
func accessRepair(s *Scope) (Action, bool) {
	a := s.Access
	switch {
	case a.AuthWanted && a.AuthObservedOn && !a.AuthLatched:
		return Action{Kind: KindLatchAuth, Reason: ReasonEnablingAuth, Message: "etcd authentication is on; recording it in status.authEnabled"}, true
	case a.PasswordRejected && a.PreviousSession:
		return Action{Kind: KindChangePassword, Reason: ReasonChangingRootPassword,
			Message: "etcd rejected the password in the credentials Secret; setting root's password to it through the session of the previous one"}, true
	}
	return Action{}, false
}

// enableAuth turns etcd auth on once the cluster converged (every member Ready on the latched
// template, no learner): root is created through a quorum write, and a member still joining would
// only see auth turned on under it.
func enableAuth(s *Scope) (Action, bool) {
	a := s.Access
	if !a.AuthWanted || a.AuthLatched || !s.Etcd.Known || !Converged(s) || a.Problem != "" {
		return Action{}, false
	}
	return Action{Kind: KindEnableAuth, Reason: ReasonEnablingAuth, Message: "creating user root with the credentials Secret's password and enabling etcd authentication"}, true
}

// holdForAccess asks for a pass after AccessRetry while a Secret the operator dials with is
// unusable or its password is rejected.
func holdForAccess(s *Scope, a Action) Action {
	if s.Access.Problem == "" && !s.Access.PasswordRejected {
		return a
	}
	if a.RequeueAfter == 0 || a.RequeueAfter > AccessRetry {
		a.RequeueAfter = AccessRetry
	}
	return a
}

// accessDegraded is the Degraded condition's reason and message for the access problems; empty
// when there is none.
func accessDegraded(s *Scope) (string, string) {
	a := s.Access
	switch {
	case a.Problem != "":
		return a.ProblemReason, fmt.Sprintf("%s; the operator cannot reach etcd with it and looks again every %ds", a.Problem, int(AccessRetry.Seconds()))
	case a.PasswordRejected:
		return ReasonAuthCredentialsRejected, fmt.Sprintf("etcd rejects root's password from the credentials Secret, and the operator holds no session with the previous password to change it "+
			"(it restarted since): put the previous password back into the Secret's key password, let the operator reconnect, then write the new one; "+
			"or set it yourself with etcdctl user passwd root. Looked at again every %ds", int(AccessRetry.Seconds()))
	}
	return "", ""
}
