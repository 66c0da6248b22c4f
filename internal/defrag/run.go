package defrag

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// MemberTimeout bounds one member's defragmentation (docs/design/timings.md); a run's deadline
// is this times its members.
const MemberTimeout = 5 * time.Minute

// Member is one member of the cluster as a pass observed it.
type Member struct {
	// Name is the EtcdMember's name; ID its etcd member ID (0 when etcd does not list it).
	Name string
	ID   uint64
	// Learner is true for a learner; false for a voter.
	Learner bool
	// Answered is true when the member answered Status this pass; Sizes is then its answer.
	Answered bool
	Sizes    Sizes
	// PodReady is true when the member's Pod is Ready.
	PodReady bool
	// CorruptAlarm is true when a CORRUPT alarm names the member.
	CorruptAlarm bool
}

// health folds the member's observation the way the cluster controller does (docs/design/quorum.md).
func (m Member) health() quorum.Health {
	return quorum.Observation{StatusAnswered: m.Answered, PodReady: m.PodReady, CorruptAlarm: m.CorruptAlarm}.Health()
}

// View is what one pass observed of the cluster a run defragments.
type View struct {
	// Members are the cluster's running members that etcd lists, in any order.
	Members []Member
	// Leader is the leader's member ID; 0 when unknown.
	Leader uint64
	// NoSpace is true while a NOSPACE alarm is active.
	NoSpace bool
	// Now is the pass's clock reading.
	Now time.Time
}

// member returns the member named name.
func (v View) member(name string) (Member, bool) {
	i := slices.IndexFunc(v.Members, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Member{}, false
	}
	return v.Members[i], true
}

// quorumView is the gate's projection of v.
func (v View) quorumView() quorum.View {
	var q quorum.View
	for _, m := range v.Members {
		if m.Learner {
			q.Learners = append(q.Learners, quorum.Learner{Name: m.Name, Started: true})
		} else {
			q.Voters = append(q.Voters, quorum.Voter{Name: m.Name, Health: m.health()})
		}
	}
	return q
}

// Start lists the members of a run that starts now, in the order they will go: followers by
// name, the leader last. Members the rule does not select are Skipped with the rule's reason.
func Start(rule *etcdv1alpha2.DefragRule, v View) []etcdv1alpha2.DefragMemberStatus {
	ms := slices.Clone(v.Members)
	slices.SortFunc(ms, func(a, b Member) int {
		return cmp.Or(cmp.Compare(boolInt(a.ID == v.Leader), boolInt(b.ID == v.Leader)), cmp.Compare(a.Name, b.Name))
	})
	now := metav1.NewTime(v.Now)
	out := make([]etcdv1alpha2.DefragMemberStatus, 0, len(ms))
	for _, m := range ms {
		st := etcdv1alpha2.DefragMemberStatus{Name: m.Name, Role: etcdv1alpha2.DefragRoleFollower, Outcome: etcdv1alpha2.DefragOutcomePending}
		if m.ID != 0 && m.ID == v.Leader {
			st.Role = etcdv1alpha2.DefragRoleLeader
		}
		if !m.Answered {
			// Evaluated again when its turn comes: a member that did not answer now may then.
			st.Reason = "not evaluated yet: the member did not answer Status"
			out = append(out, st)
			continue
		}
		st.DBSizeBefore = m.Sizes.DBSize
		ok, why := Evaluate(rule, m.Sizes, v.NoSpace)
		st.Reason = why
		if !ok {
			st.Outcome, st.FinishedAt = etcdv1alpha2.DefragOutcomeSkipped, &now
		}
		out = append(out, st)
	}
	return out
}

// withQuota returns s with the quota set.
func withQuota(s Sizes, quota int64) Sizes {
	s.Quota = quota
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// StepKind is what a Step does.
type StepKind string

// Step kinds.
const (
	// StepWait waits for the cluster (a member not healthy enough to spare another); requeue.
	StepWait StepKind = "Wait"
	// StepMoveLeader moves leadership to Step.Target before the leader's turn.
	StepMoveLeader StepKind = "MoveLeader"
	// StepDefragment defragments Step.Member.
	StepDefragment StepKind = "Defragment"
	// StepDisarm disarms the NOSPACE alarm, then finishes the run as Step.Phase.
	StepDisarm StepKind = "Disarm"
	// StepFinish finishes the run as Step.Phase.
	StepFinish StepKind = "Finish"
	// StepSkip records Step.Member Skipped with Step.Message: it left the cluster, or the rule
	// does not select it now that it answered.
	StepSkip StepKind = "Skip"
)

// Run is a Running run as the planner sees it.
type Run struct {
	// Rule is spec.rule.
	Rule *etcdv1alpha2.DefragRule
	// Members are status.members: Start's list with the outcomes recorded since.
	Members []etcdv1alpha2.DefragMemberStatus
	// Started is status.startedAt.
	Started time.Time
	// Quota is the cluster's backend quota in bytes.
	Quota int64
}

// Step is the planner's answer for a Running run.
type Step struct {
	Kind StepKind
	// Member is the member to defragment (StepDefragment); Target the voter leadership moves to
	// (StepMoveLeader).
	Member, Target string
	// Disruptive is true when defragmenting Member leaves the cluster without a quorum while it
	// runs: a single-voter cluster.
	Disruptive bool
	// Phase is the final phase (StepFinish, StepDisarm).
	Phase etcdv1alpha2.DefragPhase
	// Reason and Message explain a wait or a finish, for the Ready condition.
	Reason, Message string
}

// Ready condition reasons of an EtcdDefrag (docs/api.md, "EtcdDefrag").
const (
	ReasonPending                  = "Pending"
	ReasonClusterNotFound          = "ClusterNotFound"
	ReasonWaitingForCluster        = "WaitingForCluster"
	ReasonQueued                   = "Queued"
	ReasonRunning                  = "Running"
	ReasonWaitingForHealthyMembers = "WaitingForHealthyMembers"
	ReasonComplete                 = "Complete"
	ReasonMembersFailed            = "MembersFailed"
	ReasonDeadlineExceeded         = "DeadlineExceeded"
)

// Deadline is when a run that started at started with n members must be final.
func Deadline(started time.Time, n int) time.Time {
	return started.Add(time.Duration(max(n, 1)) * MemberTimeout)
}

// Next plans one step of a Running run whose members are ms (as Start listed them, outcomes
// recorded since): the next Pending member not leading the cluster by name, then the leader,
// after leadership moved to a healthy voter when there are at least three voters; each
// member only when the quorum gate lets it be disrupted; then, once no member is Pending, the
// NOSPACE disarm when every member is below the quota, and the final phase.
func Next(r Run, v View) Step {
	ms := r.Members
	pending := pendingOrder(ms, v.Leader, v)
	if len(pending) > 0 && !v.Now.Before(Deadline(r.Started, len(ms))) {
		return Step{Kind: StepFinish, Phase: etcdv1alpha2.DefragPhaseFailed, Reason: ReasonDeadlineExceeded,
			Message: fmt.Sprintf("the run's deadline (%d members × %s) passed with %d members left", len(ms), MemberTimeout, len(pending))}
	}
	if len(pending) == 0 {
		return finish(ms, r.Quota, v)
	}
	next := pending[0]
	m, ok := v.member(next)
	if !ok {
		return Step{Kind: StepSkip, Member: next, Message: "the member is no longer in the cluster"}
	}
	if !m.Answered {
		// Defragment would only wait out its timeout on a member that does not answer.
		return Step{Kind: StepWait, Member: next, Reason: ReasonWaitingForHealthyMembers,
			Message: fmt.Sprintf("member %s waits: it does not answer Status", next)}
	}
	if i := slices.IndexFunc(ms, func(s etcdv1alpha2.DefragMemberStatus) bool { return s.Name == next }); ms[i].DBSizeBefore == 0 {
		// Not evaluated when the run started (it did not answer then): the rule decides now.
		if sel, why := Evaluate(r.Rule, withQuota(m.Sizes, r.Quota), v.NoSpace); !sel {
			return Step{Kind: StepSkip, Member: next, Message: why}
		}
	}
	q := v.quorumView()
	if m.ID != 0 && m.ID == v.Leader && len(q.Voters) >= 3 {
		return moveLeader(ms, next, v, q)
	}
	d := quorum.Check(q, quorum.Disrupt(next))
	if !d.Allowed {
		return Step{Kind: StepWait, Member: next, Reason: ReasonWaitingForHealthyMembers,
			Message: fmt.Sprintf("member %s waits: %s", next, d.Message)}
	}
	return Step{Kind: StepDefragment, Member: next, Disruptive: d.Disruptive}
}

// pendingOrder lists the Pending members in the order they go: by name, the current leader
// last. Members the pass does not see (gone from etcd) are left out; finishRemoved records them.
func pendingOrder(ms []etcdv1alpha2.DefragMemberStatus, leader uint64, v View) []string {
	var out []string
	last := ""
	for _, s := range ms {
		if s.Outcome != etcdv1alpha2.DefragOutcomePending {
			continue
		}
		m, ok := v.member(s.Name)
		switch {
		case !ok:
			out = append(out, s.Name) // its turn fails it: the member left the cluster
		case m.ID != 0 && m.ID == leader:
			last = s.Name
		default:
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	if last != "" {
		out = append(out, last)
	}
	return out
}

// moveLeader moves leadership away from leader to a healthy voter, preferring one already
// done (defragmented or skipped), then by name: the new leader then has nothing left to do.
func moveLeader(ms []etcdv1alpha2.DefragMemberStatus, leader string, v View, q quorum.View) Step {
	done := map[string]bool{}
	for _, s := range ms {
		done[s.Name] = s.Outcome != etcdv1alpha2.DefragOutcomePending
	}
	var candidates []string
	for _, m := range v.Members {
		if m.Name != leader && !m.Learner && m.health() == quorum.Healthy {
			candidates = append(candidates, m.Name)
		}
	}
	slices.SortFunc(candidates, func(a, b string) int {
		return cmp.Or(cmp.Compare(boolInt(!done[a]), boolInt(!done[b])), cmp.Compare(a, b))
	})
	if len(candidates) == 0 {
		return Step{Kind: StepWait, Member: leader, Reason: ReasonWaitingForHealthyMembers,
			Message: fmt.Sprintf("leader %s goes last, once leadership can move to a healthy voter; none is healthy", leader)}
	}
	d := quorum.Check(q, quorum.MoveLeader(candidates[0]))
	if !d.Allowed {
		return Step{Kind: StepWait, Member: leader, Reason: ReasonWaitingForHealthyMembers, Message: d.Message}
	}
	return Step{Kind: StepMoveLeader, Member: leader, Target: candidates[0]}
}

// finish decides the final phase once no member is Pending, and whether to disarm NOSPACE
// first: only when every member answered with a database below the quota, since etcd would
// raise the alarm again at the next write otherwise.
func finish(ms []etcdv1alpha2.DefragMemberStatus, quota int64, v View) Step {
	phase, reason, msg := etcdv1alpha2.DefragPhaseComplete, ReasonComplete, summary(ms)
	if failed := outcomes(ms, etcdv1alpha2.DefragOutcomeFailed); len(failed) > 0 {
		phase, reason = etcdv1alpha2.DefragPhaseFailed, ReasonMembersFailed
	}
	if !v.NoSpace {
		return Step{Kind: StepFinish, Phase: phase, Reason: reason, Message: msg}
	}
	if over := overQuota(quota, v); len(over) > 0 {
		return Step{Kind: StepFinish, Phase: phase, Reason: reason, Message: msg +
			fmt.Sprintf("; the NOSPACE alarm stays armed: %s not below the %s quota; delete keys and compact, then create another EtcdDefrag (docs/defrag.md)",
				joinNames(over), Bytes(quota))}
	}
	return Step{Kind: StepDisarm, Phase: phase, Reason: reason, Message: msg + "; every member is below the quota, the NOSPACE alarm is disarmed"}
}

// overQuota names, sorted, the members whose database is not below quota or that did not answer.
func overQuota(quota int64, v View) []string {
	var out []string
	for _, m := range v.Members {
		if !m.Answered || m.Sizes.DBSize >= quota {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}

// outcomes names the members with outcome o, in list order.
func outcomes(ms []etcdv1alpha2.DefragMemberStatus, o etcdv1alpha2.DefragOutcome) []string {
	var out []string
	for _, s := range ms {
		if s.Outcome == o {
			out = append(out, s.Name)
		}
	}
	return out
}

// summary counts the outcomes, naming the failed members.
func summary(ms []etcdv1alpha2.DefragMemberStatus) string {
	msg := fmt.Sprintf("%d defragmented, %d skipped", len(outcomes(ms, etcdv1alpha2.DefragOutcomeDefragmented)), len(outcomes(ms, etcdv1alpha2.DefragOutcomeSkipped)))
	if failed := outcomes(ms, etcdv1alpha2.DefragOutcomeFailed); len(failed) > 0 {
		msg += ", failed: " + joinNames(failed)
	}
	return msg
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
