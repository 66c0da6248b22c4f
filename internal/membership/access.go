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
	// AuthRequiredNotConfigured says etcd answered that auth is on while the spec asks for none:
	// a snapshot restored with spec.bootstrap.restore keeps the auth store of the cluster it was
	// taken from (docs/backup-restore.md, "Restore"), and the operator holds no credentials for
	// it. spec.auth is immutable, so only a new cluster fixes it (docs/auth.md).
	AuthRequiredNotConfigured bool
}

// Reasons of the access conditions (docs/design/conditions-and-events.md).
const (
	ReasonCertificateInvalid      = "CertificateInvalid"
	ReasonAuthSecretInvalid       = "AuthSecretInvalid"
	ReasonAuthCredentialsRejected = "AuthCredentialsRejected"
	// ReasonAuthRequiredNotConfigured: etcd has auth on, the spec asks for none (Access.
	// AuthRequiredNotConfigured).
	ReasonAuthRequiredNotConfigured = "AuthRequiredNotConfigured"
	ReasonEnablingAuth              = "EnablingAuth"
	ReasonChangingRootPassword      = "ChangingRootPassword"
)

// AccessRetry is how soon a pass looks again at a Secret the operator cannot dial with: Secrets
// are read uncached and by name, so no watch reports the fix. A cluster held for
// AuthRequiredNotConfigured is looked at as often, in case auth was turned off in etcd by hand.
const AccessRetry = 30 * time.Second

// holdForUnconfiguredAuth stops every step while etcd has auth on that the spec does not ask
// for (docs/auth.md, "A restored snapshot with auth on"). etcd refuses every call that changes
// membership or moves leadership without root's credentials, which the operator was never
// given; and as only a new cluster can fix the spec, nothing is worth changing in this one (a
// member created could not join, a roll would restart members for nothing). Ahead of every
// rule, quorum recovery included: a recovery re-adds members, which etcd would refuse too.
func holdForUnconfiguredAuth(s *Scope) (Action, bool) {
	if !s.Access.AuthRequiredNotConfigured {
		return Action{}, false
	}
	return Action{Kind: KindWait, Reason: ReasonAuthRequiredNotConfigured, Message: authRequiredMessage(), RequeueAfter: AccessRetry}, true
}

// authRequiredMessage says what happened and the only fix: spec.auth is immutable.
func authRequiredMessage() string {
	return fmt.Sprintf("etcd has authentication on, but spec.auth does not ask for it (a cluster restored from a snapshot keeps the users and the auth setting "+
		"of the cluster the snapshot was taken from), and the operator has no credentials: it makes no membership change. "+
		"spec.auth cannot be added to a cluster: recreate the EtcdCluster with spec.auth.enabled: true and spec.auth.rootCredentialsSecretRef.name "+
		"naming a Secret whose key password holds root's password in the snapshot's cluster (spec.auth needs spec.tls.client). Looked at again every %ds",
		int(AccessRetry.Seconds()))
}

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
// unusable, its password is rejected, or etcd has auth on that the spec does not ask for.
func holdForAccess(s *Scope, a Action) Action {
	if s.Access.Problem == "" && !s.Access.PasswordRejected && !s.Access.AuthRequiredNotConfigured {
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
	case a.AuthRequiredNotConfigured:
		return ReasonAuthRequiredNotConfigured, authRequiredMessage()
	case a.PasswordRejected:
		return ReasonAuthCredentialsRejected, fmt.Sprintf("etcd rejects root's password from the credentials Secret, and the operator holds no session with the previous password to change it "+
			"(it restarted since): put the previous password back into the Secret's key password, let the operator reconnect, then write the new one; "+
			"or set it yourself with etcdctl user passwd root. Looked at again every %ds", int(AccessRetry.Seconds()))
	}
	return "", ""
}
