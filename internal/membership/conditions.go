package membership

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Available and Degraded reasons (docs/design/conditions-and-events.md) computed here.
const (
	ReasonAllMembersLost        = "AllMembersLost"
	ReasonReplacementBackoff    = "ReplacementBackoff"
	ReasonQuorumLost            = "QuorumLost"
	ReasonBelowTargetQuorum     = "BelowTargetQuorum"
	ReasonClusterUnreachable    = "ClusterUnreachable"
	ReasonQuorumAvailable       = "QuorumAvailable"
	ReasonQuorumHealthy         = "QuorumHealthy"
	ReasonMemberDeletionBlocked = "MemberDeletionBlocked"
	ReasonMemberUnschedulable   = "MemberUnschedulable"
	ReasonMemberStartFailed     = health.DegradedMemberStartFailed
	ReasonMembersUnhealthy      = "MembersUnhealthy"
)

// Counts are the member counts of status (docs/api.md, "EtcdCluster status") and the Available arithmetic.
type Counts struct {
	// Voters is the number of voters: etcd's, or the members' status while etcd is unknown.
	Voters int
	// ReadyVoters is the number of running voters whose EtcdMember is Ready (status.readyMembers).
	ReadyVoters int
	// Updated is the number of running members on the latched template and running it.
	Updated int
	// Broken is the number of members whose Healthy condition is False.
	Broken int
}

// Count computes the Counts of s.
func Count(s *Scope) Counts {
	var c Counts
	if s.Etcd.Known {
		for _, e := range s.Voters() {
			// A dormant member stays in etcd's list but has no Pod: it protects nothing.
			if m, ok := s.MemberOf(e); !ok || !m.Dormant {
				c.Voters++
			}
		}
	}
	for _, m := range s.Members {
		if m.Unhealthy {
			c.Broken++
		}
		if !m.Running() {
			continue
		}
		if !s.Etcd.Known && m.VoterHint {
			c.Voters++
		}
		if m.Ready && s.IsVoter(m) {
			c.ReadyVoters++
		}
		if m.current() {
			c.Updated++
		}
	}
	return c
}

// AllMembersLost reports the total-loss situation of docs/design/healing.md: a formed cluster with no
// EtcdMember and no PVC left, or a paused one whose dormant member's PVC is gone.
func AllMembersLost(s *Scope) bool {
	if s.ClusterID == "" {
		return false
	}
	if len(s.Members) == 0 && len(s.PVCs) == 0 {
		return true
	}
	for _, m := range s.Members {
		// A quorum recovery stops every member but its survivor, Memory ones too: theirs is
		// data the recovery gives up on, not a lost cluster (docs/design/quorum-recovery.md).
		if m.Dormant && s.Recovery == nil && !slices.ContainsFunc(s.PVCs, func(p PVC) bool { return p.Member == m.Name }) {
			return true
		}
	}
	return s.Memory && everyRunningMember(s, health.ReasonDataLost)
}

// everyRunningMember reports whether the cluster has running members and each of them is
// Healthy=False with one of reasons.
func everyRunningMember(s *Scope, reasons ...string) bool {
	running := s.Running()
	return len(running) > 0 && !slices.ContainsFunc(running, func(m Member) bool {
		return !m.Unhealthy || !slices.Contains(reasons, m.HealthyReason)
	})
}

// ConditionInput is what the conditions are computed from.
type ConditionInput struct {
	// Scope is the pass's observation.
	Scope *Scope
	// Action is the planner's step for this pass.
	Action Action
	// Lock is the lock's decision for this pass.
	Lock Lock
	// Generation is metadata.generation, written into every condition.
	Generation int64
}

// Conditions computes Available, Progressing and Degraded (docs/design/conditions-and-events.md). Messages are
// deterministic: sorted names, no timestamps other than a fixed deadline, no addresses.
// lastTransitionTime is left for meta.SetStatusCondition, which keeps it while the status stays.
func Conditions(in ConditionInput) []metav1.Condition {
	return []metav1.Condition{available(in), progressing(in), degraded(in)}
}

func cond(t string, st metav1.ConditionStatus, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen}
}

// quorumLost reports Ready voters below q(max(voters, target)) with at least one running voter
// not Ready. A cluster still forming is Bootstrapping or BelowTargetQuorum instead: its newest
// voter is not Ready yet by construction.
func quorumLost(s *Scope, c Counts) bool {
	return s.ClusterID != "" && !s.Bootstrapping && c.Voters > 0 && len(notReadyVoters(s)) > 0 &&
		c.ReadyVoters < quorum.AvailableQuorum(c.Voters, int(s.Target))
}

func available(in ConditionInput) metav1.Condition {
	s, gen := in.Scope, in.Generation
	c := Count(s)
	need := quorum.AvailableQuorum(c.Voters, int(s.Target))
	f := func(reason, msg string) metav1.Condition {
		return cond(etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse, reason, msg, gen)
	}
	switch {
	case AllMembersLost(s):
		return f(ReasonAllMembersLost, "every member and its data are gone; restore from a snapshot into a new EtcdCluster")
	case restoreFailed(s) != "":
		// Ahead of missing TLS material: the seed's Pod was built, so its Secrets are there.
		return f(ReasonRestoreFailed, restoreFailed(s))
	case s.TLS.CertManagerMissing:
		return f(ReasonCertManagerNotInstalled, certManagerMessage())
	case s.Access.AuthRequiredNotConfigured:
		// Ahead of QuorumLost: members whose Pods are Ready serve, only not to this operator.
		return f(ReasonAuthRequiredNotConfigured, authRequiredMessage())
	case quorumLost(s, c):
		return f(ReasonQuorumLost, fmt.Sprintf("%d of %d voters Ready, quorum needs %d; not Ready: %s",
			c.ReadyVoters, c.Voters, need, strings.Join(notReadyVoters(s), ", ")))
	case s.Target == 0:
		return f(ReasonPaused, pausedMessage(s))
	case s.ClusterID == "":
		return f(ReasonBootstrapping, "the cluster has not formed yet")
	case c.ReadyVoters < need:
		return f(ReasonBelowTargetQuorum, fmt.Sprintf("%d voters Ready; %d members need %d", c.ReadyVoters, max(c.Voters, int(s.Target)), need))
	case !s.Etcd.Known:
		return cond(etcdv1alpha2.ConditionAvailable, metav1.ConditionUnknown, ReasonClusterUnreachable,
			"member Pods are Ready but no member answers the operator", gen)
	case c.ReadyVoters >= int(s.Target):
		return cond(etcdv1alpha2.ConditionAvailable, metav1.ConditionTrue, ReasonQuorumHealthy,
			fmt.Sprintf("%d of %d voters Ready", c.ReadyVoters, s.Target), gen)
	default:
		return cond(etcdv1alpha2.ConditionAvailable, metav1.ConditionTrue, ReasonQuorumAvailable,
			fmt.Sprintf("%d of %d members Ready, quorum needs %d", c.ReadyVoters, s.Target, need), gen)
	}
}

func progressing(in ConditionInput) metav1.Condition {
	s, a, l, gen := in.Scope, in.Action, in.Lock, in.Generation
	st, reason, msg := metav1.ConditionTrue, a.Reason, a.Message
	converged := Converged(s)
	switch {
	case AllMembersLost(s):
		st, reason, msg = metav1.ConditionFalse, ReasonAllMembersLost, "no member is left to converge; restore from a snapshot"
	case l.Rejected != "":
		// Ahead of the deadline, unlike the order of docs/design/conditions-and-events.md: a cluster that has not
		// converged meets the version check only once its deadline passed, so DeadlineExceeded
		// first would hide every refusal there; the refusal is what the user must act on.
		st, reason, msg = metav1.ConditionFalse, ReasonVersionChangeRejected, l.Rejected
		if l.Expired {
			msg += "; the progress deadline passed; still working: " + a.Message
		}
	case a.Reason == ReasonRestoreFailed:
		// What the user must act on; no deadline makes it more true. The kubelet runs the
		// restore again, so a failure that goes away (a store back online) lifts it.
		st = metav1.ConditionFalse
	case a.Reason == ReasonAuthRequiredNotConfigured:
		// Nothing progresses until the cluster is recreated; no deadline makes it more true.
		st = metav1.ConditionFalse
	case l.Expired:
		st, reason = metav1.ConditionFalse, ReasonDeadlineExceeded
		if s.ClusterID == "" {
			reason = ReasonBootstrapStalled
		}
		msg = "the progress deadline passed; still working: " + a.Message
	case l.Adopted:
		reason, msg = l.AdoptReason, fmt.Sprintf("adopted generation %d: %s", l.ObservedGeneration, a.Message)
	case a.Kind == KindNone && converged && len(s.TLS.Rotating) > 0:
		// Converged, but a CA rotation waits for time (docs/tls.md, "CA rotation"): not
		// Reconciled until the old CA is gone and the members restarted without it.
		reason, msg = ReasonRotatingCA, strings.Join(s.TLS.Rotating, "; ")
	case a.Kind == KindNone && a.Reason == ReasonPaused && converged:
		st = metav1.ConditionFalse
	case a.Kind == KindNone && a.Reason == ReasonStorageExpansionUnsupported && converged:
		// Never Reconciled while a PVC is smaller than the latched size (docs/design/storage.md); the
		// message says what a person can do.
		st = metav1.ConditionFalse
	case a.Kind == KindNone && converged:
		st, reason = metav1.ConditionFalse, ReasonReconciled
	case a.Kind == KindNone && a.Reason == ReasonExpandingStorage:
		// Waiting on the volumes, which the PVC watch reports: reason and message as planned.
	case a.Kind == KindNone:
		reason = progressReason(s, ReasonScalingUp)
		msg = "waiting for members to be Ready on the latched template: " + strings.Join(unconverged(s), ", ")
	}
	if st == metav1.ConditionTrue && reason != ReasonRotatingCA && len(s.TLS.Rotating) > 0 {
		msg += "; " + strings.Join(s.TLS.Rotating, "; ")
	}
	if l.Pending {
		msg += "; " + l.PendingMessage
	}
	return cond(etcdv1alpha2.ConditionProgressing, st, reason, msg, gen)
}

func degraded(in ConditionInput) metav1.Condition {
	s, gen := in.Scope, in.Generation
	c := Count(s)
	t := func(reason, msg string) metav1.Condition {
		return cond(etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, reason, msg, gen)
	}
	blocked := blockedDeletions(s)
	unschedulable := unschedulableMembers(s)
	startFailed := rollHaltedBy(s)
	unhealthy := unhealthyMembers(s)
	hashReason, hashMessage := hashDegraded(s, unhealthy)
	accessReason, accessMessage := accessDegraded(s)
	switch {
	case AllMembersLost(s):
		return t(ReasonAllMembersLost, "every member and its data are gone; restore from a snapshot into a new EtcdCluster")
	case quorumLost(s, c):
		msg := "quorum lost; not Ready: " + strings.Join(notReadyVoters(s), ", ")
		if everyRunningMember(s, health.ReasonDataLost, health.ReasonDataCorrupt) {
			// Nothing can be replaced without a quorum, and no member has data to recover from.
			msg += "; every member's data is lost or corrupt: restore from a snapshot into a new EtcdCluster"
		} else {
			msg += recoveryNote(s)
		}
		return t(ReasonQuorumLost, msg)
	case restoreFailed(s) != "":
		return t(ReasonRestoreFailed, restoreFailed(s))
	case noSpaceMessage(s) != "":
		return t(ReasonAlarmActive, noSpaceMessage(s))
	case len(s.TLS.MissingSecrets) > 0:
		return t(ReasonTLSSecretMissing, tlsSecretMessage(s.TLS))
	case len(s.TLS.Certificates) > 0:
		return t(ReasonCertificateInvalid, certificateMessage(s.TLS))
	case accessReason != "":
		return t(accessReason, accessMessage)
	case len(blocked) > 0:
		return t(ReasonMemberDeletionBlocked, fmt.Sprintf("deletion of %s is held because the operator did not initiate it; annotate the member with %s=true to let it be replaced",
			strings.Join(blocked, ", "), etcdv1alpha2.AnnotationAllowDeletion))
	case len(startFailed) > 0:
		return t(ReasonMemberStartFailed, strings.Join(startFailed, "; "))
	case s.Backoff.Attempts > 0 && backingOff(s) != "":
		return t(ReasonReplacementBackoff, backingOff(s))
	case len(unschedulable) > 0:
		return t(ReasonMemberUnschedulable, strings.Join(unschedulable, "; "))
	case len(awaitingReadoption(s)) > 0:
		return t(ReasonMembersUnhealthy, "lost their EtcdMember, being re-adopted from their PVCs: "+strings.Join(awaitingReadoption(s), ", "))
	case hashReason != "":
		return t(hashReason, hashMessage)
	case len(unhealthy) > 0:
		return t(ReasonMembersUnhealthy, "not healthy: "+strings.Join(unhealthy, ", "))
	case s.Target == 0:
		return cond(etcdv1alpha2.ConditionDegraded, metav1.ConditionFalse, ReasonPaused, pausedMessage(s), gen)
	default:
		msg := "no member needs attention"
		if lagging := laggingMembers(s); len(lagging) > 0 {
			// docs/design/healing.md: a lagging member is a note, not a failure; it usually catches up.
			msg += "; catching up with the leader (applied index more than " + fmt.Sprint(LagThreshold) + " entries behind): " + strings.Join(lagging, ", ")
		}
		return cond(etcdv1alpha2.ConditionDegraded, metav1.ConditionFalse, ReasonQuorumHealthy, msg, gen)
	}
}

// laggingMembers names the members whose applied index trails the leader's, sorted.
func laggingMembers(s *Scope) []string {
	var out []string
	for name, v := range EndpointViews(s) {
		if v.Lagging {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// backingOff describes the member whose replacement the back-off holds, or is empty.
func backingOff(s *Scope) string {
	for _, m := range s.Running() {
		if neverStarted(s, m) {
			return backoffMessage(m, s.Backoff.Attempts) + "; " + m.HealthyMessage
		}
	}
	return ""
}

// notReadyVoters names the running voters that are not Ready, sorted.
func notReadyVoters(s *Scope) []string {
	var out []string
	for _, m := range s.Running() {
		if s.IsVoter(m) && !m.Ready {
			out = append(out, m.Name)
		}
	}
	return out
}

// unhealthyMembers names members that need attention once the cluster formed: Healthy=False, or
// a running voter that is not Ready. Learners and pending members are not Ready by design.
func unhealthyMembers(s *Scope) []string {
	if s.ClusterID == "" {
		return nil
	}
	var out []string
	for _, m := range s.Members {
		if m.Unhealthy || (m.Running() && s.IsVoter(m) && !m.Ready) {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}

// unschedulableMembers describes, sorted by name, the members whose Pod the scheduler has not
// placed for the pending grace: the member controller's Healthy=False/Unschedulable, quoting the
// scheduler. Unlike other unhealthy members they count before the cluster forms: a seed that
// never schedules is exactly such a member.
func unschedulableMembers(s *Scope) []string {
	var out []string
	for _, m := range s.Members {
		if m.Running() && m.HealthyReason == health.ReasonUnschedulable {
			out = append(out, "member "+m.Name+": "+m.HealthyMessage)
		}
	}
	slices.Sort(out)
	return out
}

// rollHaltedBy describes, sorted by name, the voters that did not start with the template the
// roll authorised for them (Healthy=False/StartFailed with a template they never ran): the roll
// waits for a corrected spec. A new member that never started is a replacement's business
// (ReplacementBackoff), not this; nor is a member whose Pod runs the template it ran before
// (rollHalt), which no roll is restarting.
func rollHaltedBy(s *Scope) []string {
	var out []string
	for _, m := range s.Running() {
		if rollHalt(s, m) {
			out = append(out, "member "+m.Name+" did not start with its new template, the rolling update is halted: "+m.HealthyMessage)
		}
	}
	slices.Sort(out)
	return out
}

// blockedDeletions names members being deleted by someone other than the operator.
func blockedDeletions(s *Scope) []string {
	var out []string
	for _, m := range s.Members {
		if m.Deleting && m.RemovalReason == "" && !m.AllowDeletion {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}

// unconverged names running members that keep the cluster from converging.
func unconverged(s *Scope) []string {
	var out []string
	for _, m := range s.Running() {
		if m.Pending || !m.Ready || !m.current() {
			out = append(out, m.Name)
		}
	}
	return out
}
