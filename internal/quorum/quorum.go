package quorum

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Health is what the operator observed about one voter in the current pass.
type Health int

const (
	// HealthUnknown is the zero value: nothing was observed (no Status answer yet, Pod not
	// seen). It counts as unhealthy.
	HealthUnknown Health = iota
	// Healthy means the member answered Status within its timeout, its Pod is Ready and no
	// CORRUPT alarm names it.
	Healthy
	// Unhealthy means one of the Healthy facts was observed to be false.
	Unhealthy
)

// String returns the health as a lower-case word.
func (h Health) String() string {
	switch h {
	case Healthy:
		return "healthy"
	case Unhealthy:
		return "unhealthy"
	default:
		return "unknown"
	}
}

// Observation holds the facts that make a voter healthy (docs/design/quorum.md, "Vocabulary").
type Observation struct {
	// StatusAnswered is true when the member answered Status within its timeout this pass.
	StatusAnswered bool
	// PodReady is true when the member's Pod is Ready.
	PodReady bool
	// CorruptAlarm is true when a CORRUPT alarm names the member.
	CorruptAlarm bool
}

// Health folds the observation into a Health. Only a member with every fact observed good is
// Healthy; a member that did not answer is HealthUnknown rather than Unhealthy, since the
// operator cannot tell a dead member from a slow network (both count as unhealthy).
func (o Observation) Health() Health {
	switch {
	case !o.StatusAnswered:
		return HealthUnknown
	case !o.PodReady || o.CorruptAlarm:
		return Unhealthy
	default:
		return Healthy
	}
}

// Voter is a non-learner etcd member as the gate sees it.
type Voter struct {
	// Name identifies the member in decisions and messages (the EtcdMember name).
	Name string
	// Health is the member's observed health this pass.
	Health Health
	// JustPromoted is true for a voter whose promotion has not yet been followed by a healthy
	// Status as a voter. Such a voter counts as unhealthy whatever Health says, because its
	// health was observed while it was a learner.
	JustPromoted bool
}

// CountsHealthy reports whether the voter counts towards the healthy voters H.
func (v Voter) CountsHealthy() bool {
	return v.Health == Healthy && !v.JustPromoted
}

// Sync is what etcd has said about a learner catching up with the leader. etcd reports it only
// by accepting or refusing a promotion, so it is usually unknown.
type Sync int

const (
	// SyncUnknown is the zero value: etcd has not been asked. Promotion is allowed and etcd
	// decides.
	SyncUnknown Sync = iota
	// InSync means etcd reported the learner in sync with the leader.
	InSync
	// NotInSync means etcd refused a promotion with "learner not in sync" (or the learner's
	// applied index is known to lag); promotion waits.
	NotInSync
)

// Learner is a learner etcd member as the gate sees it.
type Learner struct {
	// Name identifies the member in decisions and messages.
	Name string
	// Started is true when etcd lists the learner with a name: etcd's member list shows a
	// member that never started with an empty name
	// (https://etcd.io/docs/v3.6/op-guide/runtime-configuration/#add-a-new-member).
	Started bool
	// Sync is what etcd reported about the learner's log.
	Sync Sync
}

// View is the projection of an etcd cluster's membership that the gate decides over. Names
// must be unique across voters and learners; an inconsistent view is refused.
type View struct {
	Voters   []Voter
	Learners []Learner
}

// HealthyVoters returns H, the number of voters that count as healthy.
func (v View) HealthyVoters() int {
	h := 0
	for _, m := range v.Voters {
		if m.CountsHealthy() {
			h++
		}
	}
	return h
}

// Kind is the kind of an Action.
type Kind int

const (
	// KindAddLearner adds a new member as a learner (MemberAddAsLearner).
	KindAddLearner Kind = iota + 1
	// KindPromote promotes a learner to voter (MemberPromote).
	KindPromote
	// KindRemove removes a voter or a learner (MemberRemove).
	KindRemove
	// KindDisrupt takes a member away for a while without changing membership: a restart, a
	// defragmentation (which blocks the member) or a planned Pod delete.
	KindDisrupt
	// KindMoveLeader transfers raft leadership (MoveLeader).
	KindMoveLeader
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindAddLearner:
		return "AddLearner"
	case KindPromote:
		return "Promote"
	case KindRemove:
		return "Remove"
	case KindDisrupt:
		return "Disrupt"
	case KindMoveLeader:
		return "MoveLeader"
	default:
		return fmt.Sprintf("Kind(%d)", int(k))
	}
}

// Action is one membership change or member disruption. Build it with AddLearner, Promote,
// Remove, Disrupt or MoveLeader.
type Action struct {
	Kind Kind
	// Member names the target: the learner to promote, the member to remove or disrupt, or the
	// voter to move leadership to. Empty for AddLearner.
	Member string
}

// AddLearner is the action of adding a new member as a learner.
func AddLearner() Action { return Action{Kind: KindAddLearner} }

// Promote is the action of promoting the learner named learner.
func Promote(learner string) Action { return Action{Kind: KindPromote, Member: learner} }

// Remove is the action of removing the member named member, voter or learner.
func Remove(member string) Action { return Action{Kind: KindRemove, Member: member} }

// Disrupt is the action of restarting, defragmenting or deleting the Pod of the member named
// member.
func Disrupt(member string) Action { return Action{Kind: KindDisrupt, Member: member} }

// MoveLeader is the action of moving raft leadership to the voter named to.
func MoveLeader(to string) Action { return Action{Kind: KindMoveLeader, Member: to} }

// Reason says why a Decision refused an action. The zero value means allowed.
type Reason string

const (
	// ReasonNone is the reason of an allowed decision.
	ReasonNone Reason = ""
	// ReasonNoQuorum means fewer than q(V) voters are healthy, so etcd cannot commit a membership
	// change at all.
	ReasonNoQuorum Reason = "NoQuorum"
	// ReasonWouldLoseQuorum means the action would leave fewer healthy voters than the quorum of the
	// resulting membership.
	ReasonWouldLoseQuorum Reason = "WouldLoseQuorum"
	// ReasonLearnerExists means etcd admits one learner at a time and one exists.
	ReasonLearnerExists Reason = "LearnerExists"
	// ReasonLearnerNotStarted means the learner to promote has not started (it has no name in etcd's
	// member list), so it cannot be in sync.
	ReasonLearnerNotStarted Reason = "LearnerNotStarted"
	// ReasonLearnerNotInSync means etcd reported the learner not in sync with the leader yet.
	ReasonLearnerNotInSync Reason = "LearnerNotInSync"
	// ReasonLastVoter means removing the only voter would leave a cluster that cannot exist.
	ReasonLastVoter Reason = "LastVoter"
	// ReasonUnknownMember means the action names no member of the view.
	ReasonUnknownMember Reason = "UnknownMember"
	// ReasonNotALearner means Promote names a voter.
	ReasonNotALearner Reason = "NotALearner"
	// ReasonNotAHealthyVoter means MoveLeader names a learner or a voter that does not count as
	// healthy.
	ReasonNotAHealthyVoter Reason = "NotAHealthyVoter"
	// ReasonInvalid means the action kind is unknown or the view names a member twice.
	ReasonInvalid Reason = "Invalid"
)

// ErrRefused is matched (errors.Is) by the error of every refused Decision.
var ErrRefused = errors.New("refused by the quorum gate")

// Decision is the gate's answer for one action over one view.
type Decision struct {
	// Allowed is true when the action may run.
	Allowed bool
	// Disruptive is true for an allowed action that makes the cluster unavailable while it
	// runs: disrupting the only voter of a single-voter cluster.
	Disruptive bool
	// Reason is empty when allowed and names the failed rule otherwise.
	Reason Reason
	// Message explains the decision for a condition or an Event. It is deterministic: it
	// depends only on the view and the action.
	Message string
	// Voters, Healthy and Learners are V, H and L of the view, for metrics and logs.
	Voters, Healthy, Learners int
}

// Err returns nil for an allowed decision, and otherwise an error that matches ErrRefused and
// carries the message.
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	return &RefusedError{Decision: d}
}

// RefusedError is the error of a refused Decision.
type RefusedError struct {
	Decision Decision
}

// Error returns the decision's message.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s (%s)", e.Decision.Message, e.Decision.Reason)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Check decides whether action is safe over view, by the rules of docs/design/quorum.md (summarised
// in the package documentation). It never panics and allocates only for the message.
func Check(view View, action Action) Decision {
	d := Decision{
		Voters:   len(view.Voters),
		Healthy:  view.HealthyVoters(),
		Learners: len(view.Learners),
	}
	if name, dup := duplicateName(view); dup {
		return d.refuse(ReasonInvalid, fmt.Sprintf("the membership view names %s twice", quote(name)))
	}
	switch action.Kind {
	case KindAddLearner:
		return checkAddLearner(view, d)
	case KindPromote, KindRemove, KindDisrupt, KindMoveLeader:
	default:
		return d.refuse(ReasonInvalid, fmt.Sprintf("unknown action %s", action.Kind))
	}

	vi, li := find(view, action.Member)
	if vi < 0 && li < 0 {
		return d.refuse(ReasonUnknownMember, fmt.Sprintf("%s is not a member of the cluster", quote(action.Member)))
	}
	switch action.Kind {
	case KindPromote:
		if vi >= 0 {
			return d.refuse(ReasonNotALearner, fmt.Sprintf("%s is already a voter; only a learner can be promoted", action.Member))
		}
		return checkPromote(view.Learners[li], d)
	case KindRemove:
		if li >= 0 {
			return checkRemoveLearner(action.Member, d)
		}
		return checkRemoveVoter(view.Voters[vi], d)
	case KindDisrupt:
		if li >= 0 {
			return checkDisrupt(action.Member, false, false, d)
		}
		return checkDisrupt(action.Member, true, view.Voters[vi].CountsHealthy(), d)
	default: // KindMoveLeader
		// Without quorum there is no leader whose leadership could move.
		if r, ok := d.needQuorum("moving leadership to " + action.Member); !ok {
			return r
		}
		if li >= 0 {
			return d.refuse(ReasonNotAHealthyVoter, fmt.Sprintf("leadership cannot move to %s: it is a learner", action.Member))
		}
		if v := view.Voters[vi]; !v.CountsHealthy() {
			return d.refuse(ReasonNotAHealthyVoter, fmt.Sprintf("leadership cannot move to %s: it is %s", action.Member, describeHealth(v)))
		}
		return d.allow(fmt.Sprintf("moving leadership to %s, a healthy voter", action.Member))
	}
}

// checkAddLearner applies: H ≥ q(V) and L = 0.
func checkAddLearner(view View, d Decision) Decision {
	if r, ok := d.needQuorum("adding a learner"); !ok {
		return r
	}
	if len(view.Learners) > 0 {
		return d.refuse(ReasonLearnerExists, fmt.Sprintf("adding a learner must wait for learner %s; etcd admits one learner at a time",
			learnerNames(view.Learners)))
	}
	return d.allow(fmt.Sprintf("adding a learner with %s", healthyOf(d.Healthy, d.Voters, Of(d.Voters))))
}

// checkPromote applies: H ≥ q(V), l started (and not known to lag), H + 1 ≥ q(V + 1).
func checkPromote(l Learner, d Decision) Decision {
	doing := "promoting " + l.Name
	if r, ok := d.needQuorum(doing); !ok {
		return r
	}
	if !l.Started {
		return d.refuse(ReasonLearnerNotStarted, fmt.Sprintf("%s must wait: learner %s has not started", doing, l.Name))
	}
	if l.Sync == NotInSync {
		return d.refuse(ReasonLearnerNotInSync, fmt.Sprintf("%s must wait: learner %s is not in sync with the leader yet", doing, l.Name))
	}
	// etcd confirms the learner is in sync before it promotes it, so it counts as healthy.
	h, v := d.Healthy+1, d.Voters+1
	if h < Of(v) {
		return d.refuse(ReasonWouldLoseQuorum, fmt.Sprintf("%s would leave %s", doing, healthyOf(h, v, Of(v))))
	}
	return d.allow(fmt.Sprintf("%s leaves %s", doing, healthyOf(h, v, Of(v))))
}

// checkRemoveVoter applies: H ≥ q(V), V − 1 ≥ 1 and H − [m healthy] ≥ q(V − 1).
func checkRemoveVoter(m Voter, d Decision) Decision {
	doing := "removing " + m.Name
	if r, ok := d.needQuorum(doing); !ok {
		return r
	}
	v := d.Voters - 1
	if v < 1 {
		return d.refuse(ReasonLastVoter, fmt.Sprintf("%s would leave no voter; it is the only one", doing))
	}
	h := d.Healthy - b2i(m.CountsHealthy())
	if h < Of(v) {
		return d.refuse(ReasonWouldLoseQuorum, fmt.Sprintf("%s would leave %s", doing, healthyOf(h, v, Of(v))))
	}
	return d.allow(fmt.Sprintf("%s leaves %s", doing, healthyOf(h, v, Of(v))))
}

// checkRemoveLearner applies: H ≥ q(V). A learner does not vote, so its removal changes no
// quorum, but etcd must still commit the change.
func checkRemoveLearner(name string, d Decision) Decision {
	doing := "removing learner " + name
	if r, ok := d.needQuorum(doing); !ok {
		return r
	}
	return d.allow(fmt.Sprintf("%s leaves %s", doing, healthyOf(d.Healthy, d.Voters, Of(d.Voters))))
}

// checkDisrupt applies: H − [m healthy] ≥ q(V); the only voter of a single-voter cluster may be
// disrupted whatever its health (there is no other way to restart it), flagged Disruptive. A
// learner is not a voter, so [m healthy] is 0 for it and the single-voter exception does not
// apply.
func checkDisrupt(name string, isVoter, healthyVoter bool, d Decision) Decision {
	doing := "disrupting " + name
	if isVoter && d.Voters == 1 {
		d = d.allow(fmt.Sprintf("%s takes down the only voter: the cluster is unavailable until it returns", doing))
		d.Disruptive = true
		return d
	}
	h := d.Healthy - b2i(healthyVoter)
	if h < Of(d.Voters) {
		return d.refuse(ReasonWouldLoseQuorum, fmt.Sprintf("%s would leave %s", doing, healthyOf(h, d.Voters, Of(d.Voters))))
	}
	return d.allow(fmt.Sprintf("%s leaves %s", doing, healthyOf(h, d.Voters, Of(d.Voters))))
}

// needQuorum refuses with ReasonNoQuorum when H < q(V).
func (d Decision) needQuorum(doing string) (Decision, bool) {
	if q := Of(d.Voters); d.Healthy < q {
		return d.refuse(ReasonNoQuorum, fmt.Sprintf("%s needs quorum to commit, but only %s", doing, healthyOf(d.Healthy, d.Voters, q))), false
	}
	return d, true
}

func (d Decision) allow(msg string) Decision {
	d.Allowed, d.Reason, d.Message = true, ReasonNone, msg
	return d
}

func (d Decision) refuse(r Reason, msg string) Decision {
	d.Allowed, d.Disruptive, d.Reason, d.Message = false, false, r, msg
	return d
}

// healthyOf renders "1 healthy voter of 2; quorum needs 2".
func healthyOf(h, v, q int) string {
	noun := "voters"
	if h == 1 {
		noun = "voter"
	}
	return fmt.Sprintf("%d healthy %s of %d; quorum needs %d", h, noun, v, q)
}

func describeHealth(v Voter) string {
	if v.JustPromoted && v.Health == Healthy {
		return "just promoted and not yet seen healthy as a voter"
	}
	return v.Health.String()
}

// find returns the index of name among the voters and among the learners (-1 when absent). An
// empty name matches nothing: etcd lists unstarted members with an empty name, and an action
// must name its target.
func find(view View, name string) (voter, learner int) {
	voter, learner = -1, -1
	if name == "" {
		return voter, learner
	}
	for i := range view.Voters {
		if view.Voters[i].Name == name {
			return i, learner
		}
	}
	for i := range view.Learners {
		if view.Learners[i].Name == name {
			return voter, i
		}
	}
	return voter, learner
}

// duplicateName finds a non-empty name used twice. Views are small (≤ 7 voters and a learner),
// so the quadratic scan costs less than a map.
func duplicateName(view View) (string, bool) {
	names := func(i int) string {
		if i < len(view.Voters) {
			return view.Voters[i].Name
		}
		return view.Learners[i-len(view.Voters)].Name
	}
	n := len(view.Voters) + len(view.Learners)
	for i := range n {
		a := names(i)
		if a == "" {
			continue
		}
		for j := i + 1; j < n; j++ {
			if names(j) == a {
				return a, true
			}
		}
	}
	return "", false
}

// learnerNames lists the learners' names sorted, so that messages do not depend on list order.
func learnerNames(ls []Learner) string {
	names := make([]string, 0, len(ls))
	for _, l := range ls {
		names = append(names, quote(l.Name))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// quote renders an empty name visibly.
func quote(name string) string {
	if name == "" {
		return `""`
	}
	return name
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
