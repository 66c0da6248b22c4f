package membership

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// ReasonRollingUpdate is the Progressing reason while members are brought to the latched
// template one at a time (docs/design/rolling-updates.md).
const ReasonRollingUpdate = "RollingUpdate"

// Roll gates (docs/design/rolling-updates.md, "Roll order and gates").
const (
	// RollSettle is how long every other voter must have been Ready before the next member is
	// restarted: a member that just came back has answered its readiness probe, but a second
	// restart right behind it would leave the cluster one slow start away from losing quorum.
	RollSettle = 10 * time.Second
	// RollMaxLag is how many raft entries behind the leader another voter may be when the next
	// member is restarted: one that still replays the log would not count towards a commit.
	RollMaxLag = 1000
)

// Authorised reports whether the member carries the latched template and the template hash
// the cluster controller authorised for it is that template's hash. A member whose hash is not
// known (WantHash empty) is judged by its template alone.
func (m Member) Authorised() bool {
	return m.TemplateCurrent && (m.WantHash == "" || m.AuthorisedHash == m.WantHash)
}

// RunsTarget reports whether the member's Pod runs the latched template: its Pod carries the
// latched template's hash. Without a known hash, the member controller's Updated condition
// (the Pod's hash against the member's) stands in.
func (m Member) RunsTarget() bool {
	if !m.TemplateCurrent {
		return false
	}
	if m.WantHash == "" {
		return m.Updated
	}
	return m.PodHash == m.WantHash
}

// current reports a member that needs nothing from the roll.
func (m Member) current() bool { return m.Authorised() && m.RunsTarget() }

// roll is one rolling-update step (docs/design/rolling-updates.md): authorise the latched template (and its
// hash) on one outdated member, which its member controller then restarts on the same PVC.
// One member at a time, not-Ready members first, then followers by name, the leader last after
// its leadership moved to an updated follower. Each restart waits for every other voter to be
// Ready for RollSettle and caught up with the leader, and passes the quorum gate's Disrupt.
func roll(s *Scope) (Action, bool) {
	running := s.Running()
	var outdated []Member
	for _, m := range running {
		// A held deletion keeps serving, but its member controller no longer builds Pods:
		// a person decides about it first.
		if !m.Pending && !m.Deleting && !m.current() {
			outdated = append(outdated, m)
		}
	}
	updated := len(running) - len(outdated)
	progress := func(format string, args ...any) string {
		return fmt.Sprintf("%d/%d members updated; ", updated, len(running)) + fmt.Sprintf(format, args...)
	}
	// A member that did not start with the template authorised for it halts the roll, whether
	// its Pod was replaced already or not: restarting another member with the same template
	// would only take a second one down.
	for _, m := range running {
		if m.Authorised() && rollHalt(s, m) {
			return Action{Kind: KindWait, Member: m.Name, Reason: ReasonRollingUpdate,
				Message: progress("roll halted: %s did not become Ready with the new template: %s; correct the spec (it is adopted at the progress deadline, or at once when status.progressDeadline is moved into the past)", m.Name, m.HealthyMessage)}, true
		}
	}
	if len(outdated) == 0 {
		return Action{}, false
	}

	// A member whose Pod already runs the latched template (a member created or woken with
	// it, or one that ran before the hash was recorded) only needs its record: no restart.
	for _, m := range outdated {
		if m.WantHash != "" && m.PodHash == m.WantHash {
			return Action{Kind: KindAuthorise, Member: m.Name, Hash: m.WantHash, Reason: ReasonRollingUpdate,
				Message: progress("recording template %s on %s, whose Pod already runs it", m.WantHash, m.Name)}, true
		}
	}
	if s.Memory {
		return surge(s, running, outdated, progress), true
	}

	if a, ok := restarting(outdated, progress); ok {
		return a, true
	}

	// Failed members are replaced, not rolled (replace runs before the roll and keeps them
	// until the quorum gate lets it); a member whose data is gone gains nothing from a restart.
	candidates := slices.DeleteFunc(slices.Clone(outdated), func(m Member) bool {
		return m.Authorised() || (m.Unhealthy && slices.Contains(replaceable, m.HealthyReason))
	})
	if len(candidates) == 0 {
		return Action{}, false
	}
	if len(s.Learners()) > 0 || slices.ContainsFunc(s.Members, Member.Leaving) {
		return Action{Kind: KindWait, Reason: ReasonRollingUpdate, RequeueAfter: MembershipPoll,
			Message: progress("waiting for a membership change to finish before the next restart")}, true
	}
	return restartNext(s, candidates, progress), true
}

// rollHalt reports a member that halts a roll: a voter (or a started learner) that did not
// become Ready with a template it was never Ready with (Healthy=False/StartFailed) — a roll's.
// A member whose Pod runs the template it was last Ready with is not a roll's failure and never
// called one: the member controller calls such a member a crash loop or damaged data
// (docs/design/healing.md, "Damaged data"). Without a record (a status older than
// readyTemplateHash) the template counts as new, as before the record existed.
func rollHalt(s *Scope, m Member) bool {
	return m.Unhealthy && m.HealthyReason == health.ReasonStartFailed && !neverStarted(s, m) &&
		(m.ReadyHash == "" || m.PodHash != m.ReadyHash)
}

// RemovalReasonRollingUpdate is the removal-reason of an outdated Memory member removed by a
// surge: a member with the latched template took its place.
const RemovalReasonRollingUpdate = "RollingUpdate"

// surge rolls a Memory cluster (docs/design/rolling-updates.md): a Memory member cannot be restarted, its data
// lives in its Pod. So a member with the latched template is added first (created, added as a
// learner and promoted by the ordinary scale-up steps), and once it has been Ready for
// RollSettle and caught up, one outdated member is removed (ranked as a scale-down victim:
// unhealthy and not-Ready members first, the leader last, after leadership moved to a healthy,
// preferably updated, voter). The cluster runs one member above its target in between; a
// 1-member cluster goes 1 → 2 → 1. scale leaves the extra member to this step.
func surge(s *Scope, running, outdated []Member, progress func(string, ...any) string) Action {
	if len(s.Learners()) > 0 || slices.ContainsFunc(s.Members, func(m Member) bool { return m.Leaving() || m.Pending }) {
		return Action{Kind: KindWait, Reason: ReasonRollingUpdate, RequeueAfter: MembershipPoll,
			Message: progress("waiting for a membership change to finish")}
	}
	if len(running) <= int(s.Target) {
		if waits, after := rollSettled(s, 0); len(waits) > 0 {
			return Action{Kind: KindWait, Reason: ReasonRollingUpdate, RequeueAfter: after,
				Message: progress("adding a member with the new template once %s", strings.Join(waits, ", "))}
		}
		a := Action{Kind: KindCreateMember, Reason: ReasonRollingUpdate,
			Message: progress("adding a member with the new template to replace %s", RankVictims(s, outdated)[0].Name)}
		return gated(s, a, quorum.AddLearner())
	}
	victim := RankVictims(s, outdated)[0]
	e, inEtcd := s.EtcdMemberOf(victim)
	if inEtcd {
		if waits, after := rollSettled(s, e.ID); len(waits) > 0 {
			return Action{Kind: KindWait, Member: victim.Name, MemberID: e.ID, Reason: ReasonRollingUpdate, RequeueAfter: after,
				Message: progress("removing %s once %s", victim.Name, strings.Join(waits, ", "))}
		}
		if a, ok := moveLeadershipFrom(s, victim, e, inEtcd, ReasonRollingUpdate); ok {
			return a
		}
	}
	a := removeAction(s, victim, e, inEtcd, RemovalReasonRollingUpdate)
	if a.Kind == KindRemove {
		a.Reason, a.Message = ReasonRollingUpdate, progress("removing %s, replaced by a member with the new template", victim.Name)
	}
	return a
}

// surging reports a Memory cluster one member above its target while a member is outdated: the
// surge of a roll, whose removal waits for the new member to settle (surge), rather than a
// scale-down that would take the member that is not Ready yet first.
func surging(s *Scope, running []Member) bool {
	return s.Memory && len(running) == int(s.Target)+1 && slices.ContainsFunc(running, func(m Member) bool { return !m.Pending && !m.current() })
}

// restartNext restarts the first of candidates in roll order: not Ready first, the leader last,
// then by name; a leader hands its leadership to an updated follower in a pass of its own.
func restartNext(s *Scope, candidates []Member, progress func(string, ...any) string) Action {
	leader := func(m Member) bool {
		e, ok := s.EtcdMemberOf(m)
		return ok && e.ID == s.Etcd.Leader
	}
	slices.SortStableFunc(candidates, func(a, b Member) int {
		switch {
		case a.Ready != b.Ready:
			return boolOrder(!a.Ready, !b.Ready) // not Ready first
		case leader(a) != leader(b):
			return boolOrder(!leader(a), !leader(b)) // the leader last
		}
		return cmp.Compare(a.Name, b.Name)
	})
	m := candidates[0]
	e, inEtcd := s.EtcdMemberOf(m)
	if !inEtcd {
		return Action{Kind: KindWait, Member: m.Name, Reason: ReasonRollingUpdate, RequeueAfter: MembershipPoll,
			Message: progress("waiting for %s to appear in etcd's member list", m.Name)}
	}
	if m.WantHash == "" {
		return Action{Kind: KindWait, Member: m.Name, Reason: ReasonRollingUpdate,
			Message: progress("the template hash of %s cannot be computed (TLS members are not rolled yet)", m.Name)}
	}
	if waits, after := rollSettled(s, e.ID); len(waits) > 0 {
		return Action{Kind: KindWait, Member: m.Name, MemberID: e.ID, Reason: ReasonRollingUpdate, RequeueAfter: after,
			Message: progress("restarting %s once %s", m.Name, strings.Join(waits, ", "))}
	}
	if len(s.Voters()) > 1 && e.ID == s.Etcd.Leader {
		to, ok := leaderTransferee(s, e.ID)
		if !ok {
			return Action{Kind: KindWait, Member: m.Name, Reason: ReasonRollingUpdate, RequeueAfter: MembershipPoll,
				Message: progress("waiting for a healthy voter to take over leadership from %s", m.Name)}
		}
		a := Action{Kind: KindMoveLeader, Member: m.Name, MemberID: to.ID, Reason: ReasonRollingUpdate,
			Message: progress("moving leadership from %s to %s before restarting it", m.Name, s.DisplayName(to))}
		return gated(s, a, quorum.MoveLeader(s.DisplayName(to)))
	}
	a := Action{Kind: KindAuthorise, Member: m.Name, MemberID: e.ID, Hash: m.WantHash, Disrupts: true, Reason: ReasonRollingUpdate,
		Message: progress("restarting %s", m.Name)}
	a = gated(s, a, quorum.Disrupt(s.DisplayName(e)))
	if a.Kind == KindAuthorise && a.Gate != nil && a.Gate.Disruptive {
		a.Message += " (the only voter: the cluster is unavailable until it returns)"
	}
	return a
}

// restarting finds a member whose restart is under way (authorised, its Pod not yet on the
// authorised template) and waits for it. Its member
// controller replaces the Pod, and the Pod's watch brings the next pass. A member without a
// Pod gets one built from its authorised template anyway: nothing to restart, nothing to wait
// for here.
func restarting(outdated []Member, progress func(string, ...any) string) (Action, bool) {
	for _, m := range outdated {
		if !m.Authorised() {
			continue
		}
		if m.PodHash != "" || m.PodRunning {
			return Action{Kind: KindWait, Member: m.Name, Reason: ReasonRollingUpdate,
				Message: progress("restarting %s", m.Name) + because(m)}, true
		}
	}
	return Action{}, false
}

// rollSettled checks that every voter other than next has been Ready for RollSettle and is
// within RollMaxLag entries of the leader's applied index. It returns what is still awaited
// and how soon to look again; nothing when the next restart may go ahead.
func rollSettled(s *Scope, next uint64) ([]string, time.Duration) {
	leaderStatus, leaderKnown := s.Etcd.Statuses[s.Etcd.Leader]
	var waits []string
	after := MembershipPoll
	settle := s.rollSettle()
	for _, v := range s.Voters() {
		if v.ID == next {
			continue
		}
		m, ok := s.MemberOf(v)
		name := s.DisplayName(v)
		st, answered := s.Etcd.Statuses[v.ID]
		switch {
		case !ok || !m.Ready || !answered || !leaderKnown:
			waits = append(waits, name+" is Ready")
		case s.Now.Sub(m.ReadySince) < settle:
			waits = append(waits, fmt.Sprintf("%s has been Ready for %s", name, settle))
			after = max(after, settle-s.Now.Sub(m.ReadySince))
		case leaderStatus.RaftAppliedIndex > st.RaftAppliedIndex+RollMaxLag:
			waits = append(waits, fmt.Sprintf("%s caught up (%d entries behind the leader)", name, leaderStatus.RaftAppliedIndex-st.RaftAppliedIndex))
		}
	}
	return waits, after
}

// boolOrder orders true before false.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
