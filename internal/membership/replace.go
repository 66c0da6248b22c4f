package membership

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/health"
)

// replaceable are the Healthy reasons whose member cannot recover in place (docs/design/healing.md):
// its data is gone or wrong, etcd no longer counts it, its process keeps failing though it ran
// with its current template before, or its node is lost. StartFailed (a template that never ran),
// OOMKilled (a replacement would be killed too) and Unschedulable (a new Pod would have the
// same constraints) are reported, never replaced.
var replaceable = []string{health.ReasonDataLost, health.ReasonDataCorrupt, health.ReasonRemovedFromCluster,
	health.ReasonCrashLoop, health.ReasonNodeLost}

// Removal reasons of replacements a person asked for.
const (
	// RemovalReasonReplace: the replace annotation.
	RemovalReasonReplace = "Replace"
	// RemovalReasonDeletionAllowed: a deletion the operator did not start, allowed by the
	// allow-deletion annotation.
	RemovalReasonDeletionAllowed = "DeletionAllowed"
)

// replace removes one member that has to go; scale-up then adds a fresh member in its place. It
// is the scale-down removal (same annotation, same crash-safe steps, same quorum gate) with the
// cause as removal-reason. One at a time: a member being removed holds any other step until it
// is gone. Members etcd does not list go first: removing them costs no quorum.
func replace(s *Scope) (Action, bool) {
	cs := replacementCandidates(s)
	if len(cs) == 0 {
		return Action{}, false
	}
	c := cs[0]
	if c.reason == health.ReasonStartFailed {
		if a, ok := backoff(s, c.m); ok {
			return a, true
		}
	}
	if a, ok := moveLeadershipFrom(s, c.m, c.e, c.inEtcd, ReasonReplacingMember); ok {
		return a, true
	}
	a := removeAction(s, c.m, c.e, c.inEtcd, c.reason)
	switch {
	case a.Kind == KindBlocked && c.reason == RemovalReasonDeletionAllowed:
		a.Message = fmt.Sprintf("the deletion of %s (%s=true) is held: removing it from etcd now would break quorum: %s",
			c.m.Name, "allow-deletion", a.Message)
	case a.Kind == KindRemove && c.reason == RemovalReasonReplace && c.m.ReplaceRequested != "":
		a.Message += ": " + c.m.ReplaceRequested
	case a.Kind == KindRemove && c.m.HealthyMessage != "" && c.reason == c.m.HealthyReason:
		a.Message += ": " + c.m.HealthyMessage
	}
	return a, true
}

// replacement is a member that has to go, and why.
type replacement struct {
	m      Member
	reason string
	inEtcd bool
	e      etcdclient.Member
}

// replacementCandidates are the members that have to go, those etcd does not list first, then
// by name.
func replacementCandidates(s *Scope) []replacement {
	var cs []replacement
	for _, m := range s.Members {
		reason, ok := replacementReason(s, m)
		if !ok {
			continue
		}
		e, inEtcd := s.etcdMemberByIdentity(m)
		if answering(s, e, inEtcd) && (reason == health.ReasonCrashLoop || reason == health.ReasonNodeLost) {
			// It serves again (its Pod came back, its Node returned) and the verdict is a
			// pass behind: a member with its data intact is never replaced for a past outage.
			continue
		}
		cs = append(cs, replacement{m, reason, inEtcd, e})
	}
	slices.SortFunc(cs, func(a, b replacement) int {
		if a.inEtcd != b.inEtcd {
			if !a.inEtcd {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.m.Name, b.m.Name)
	})
	return cs
}

// replacementReason says why member m has to go (its removal-reason), or false when it stays:
// an allowed deletion, the replace annotation, a Healthy reason that cannot recover in place, or
// a member that never started.
func replacementReason(s *Scope, m Member) (string, bool) {
	switch {
	case m.RemovalReason != "" || m.Dormant:
		return "", false
	case m.Deleting && m.AllowDeletion:
		return RemovalReasonDeletionAllowed, true
	case m.Deleting:
		return "", false // held by the finalizer until a person allows it
	case m.ReplaceAnnotated:
		return RemovalReasonReplace, true
	case m.Unhealthy && slices.Contains(replaceable, m.HealthyReason):
		return m.HealthyReason, true
	case neverStarted(s, m):
		return health.ReasonStartFailed, true
	}
	return "", false
}

// answering reports whether etcd member e answered Status in this pass.
func answering(s *Scope, e etcdclient.Member, inEtcd bool) bool {
	_, ok := s.Etcd.Statuses[e.ID]
	return inEtcd && ok
}

// neverStarted reports a member that failed to start (Healthy=False/StartFailed) whose etcd
// process never joined: a new member of a scale-up or a replacement that etcd lists as a learner
// that has not started. It holds the one learner slot, so it is replaced, after a back-off. A
// started learner is catching up (a large keyspace takes minutes) and is left to finish; a voter
// that fails to start a new template is a halted roll, left for a person.
func neverStarted(s *Scope, m Member) bool {
	if !m.Unhealthy || m.HealthyReason != health.ReasonStartFailed {
		return false
	}
	e, inEtcd := s.etcdMemberByIdentity(m)
	return !inEtcd || (e.IsLearner && !e.Started())
}

// backoff holds the replacement of member m, which never started, for the back-off in force:
// each member in a row that never starts doubles the wait, from ReplacementBackoffBase up to
// ReplacementBackoffMax. A member created after the back-off last ended is a new failure and
// starts the next, longer one. It returns false once m may be replaced.
func backoff(s *Scope, m Member) (Action, bool) {
	b := s.Backoff
	if m.Created.After(b.NotBefore) {
		next := Backoff{Attempts: b.Attempts + 1}
		next.NotBefore = s.Now.Add(BackoffFor(next.Attempts))
		return Action{Kind: KindBackoff, Member: m.Name, Backoff: next, Reason: ReasonReplacingMember,
			RequeueAfter: BackoffFor(next.Attempts), Message: backoffMessage(m, next.Attempts)}, true
	}
	if wait := b.NotBefore.Sub(s.Now); wait > 0 {
		return Action{Kind: KindWait, Member: m.Name, Reason: ReasonReplacingMember, RequeueAfter: wait,
			Message: backoffMessage(m, b.Attempts)}, true
	}
	return Action{}, false
}

// BackoffFor is the wait before replacing the attempts-th member in a row that never started.
func BackoffFor(attempts int32) time.Duration {
	d := ReplacementBackoffBase
	for i := int32(1); i < attempts && d < ReplacementBackoffMax; i++ {
		d *= 2
	}
	return min(d, ReplacementBackoffMax)
}

func backoffMessage(m Member, attempts int32) string {
	return fmt.Sprintf("member %s never started (%d in a row); replacing it %s after its failure", m.Name, attempts, BackoffFor(attempts))
}
