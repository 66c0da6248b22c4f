package health

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons of the EtcdMember Healthy condition (docs/api.md, "EtcdMember status and conditions").
const (
	ReasonHealthy            = "Healthy"
	ReasonDataLost           = "DataLost"
	ReasonDataCorrupt        = "DataCorrupt"
	ReasonCrashLoop          = "CrashLoop"
	ReasonPodFailed          = "PodFailed"
	ReasonNodeLost           = "NodeLost"
	ReasonUnschedulable      = "Unschedulable"
	ReasonStartFailed        = "StartFailed"
	ReasonRemovedFromCluster = "RemovedFromCluster"
	ReasonUnreachable        = "Unreachable"
)

// EtcdCluster Degraded reasons a member's health contributes
// (docs/design/conditions-and-events.md).
const (
	DegradedMembersUnhealthy    = "MembersUnhealthy"
	DegradedMemberStartFailed   = "MemberStartFailed"
	DegradedMemberUnschedulable = "MemberUnschedulable"
)

// Action is what the member's health warrants. Classify only recommends; the EtcdCluster
// controller replaces (through the quorum gate, one replacement in flight per cluster) and the
// EtcdMember controller recreates Pods.
type Action string

const (
	// ActionNone means there is nothing to do about the member.
	ActionNone Action = "None"
	// ActionRecreatePod means deleting the member's Pod if it still exists and creating it again with
	// the same PVC and identity; no membership change (PVC members only).
	ActionRecreatePod Action = "RecreatePod"
	// ActionReplace means replacing the member under a new identity — quorum-gated MemberRemove (if
	// it is still a member), delete the EtcdMember, delete its PVC, gap-fill
	// (docs/design/healing.md).
	ActionReplace Action = "Replace"
	// ActionHaltRollout means stopping the rolling update without replacing (StartFailed).
	ActionHaltRollout Action = "HaltRollout"
)

// Result is the member's classified health.
type Result struct {
	// Status and Reason are the Healthy condition's; Message is deterministic (no timestamps,
	// no addresses), so an unchanged world writes an unchanged condition.
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	// Action is what the member's health warrants.
	Action Action
	// ForceDelete is always false: a Pod stuck Terminating on an unreachable Node is never
	// force-deleted; removal from etcd makes the old identity harmless if it comes back. It is
	// spelled out so that callers and tests can rely on it.
	ForceDelete bool
	// Degraded is the EtcdCluster Degraded reason this member contributes, empty for none.
	Degraded string
	// Fatal is the classification of the last termination message (Class empty when none).
	// Callers remember LastTermination as the next pass's PreviousTermination.
	Fatal Match
	// RecheckAfter is when the classification may change by the clock alone (a grace ending);
	// zero when only a change in the observation can change it. Callers requeue after it.
	RecheckAfter time.Duration
}

// rule is one row of the classification, checked in order; ok is false when it does not apply.
type rule func(c *classifier) (Result, bool)

// rules are checked in order, most severe and most certain first: lost or corrupt data and
// removal are facts, node and scheduling problems come next, and the timers of crash loops and
// start failures last. The first rule that applies decides.
var rules = []rule{
	(*classifier).dormant,
	(*classifier).memoryDataLost,
	(*classifier).removedFromCluster,
	(*classifier).corruptAlarm,
	(*classifier).hashDiverged,
	(*classifier).classifiedExit,
	(*classifier).terminatingOnLostNode,
	(*classifier).pendingOnLostNode,
	(*classifier).podFailed,
	(*classifier).podMissing,
	(*classifier).unschedulable,
	(*classifier).oomKilled,
	(*classifier).damagedData,
	(*classifier).startFailed,
	(*classifier).crashLoop,
	(*classifier).unreachable,
}

// Classify computes one member's Healthy condition from an observation (docs/design/healing.md). It
// is pure and deterministic: equal observations give equal results.
func Classify(obs Observation) Result {
	c := &classifier{obs: obs, g: obs.Graces.withDefaults()}
	if obs.Pod != nil && obs.Pod.Container.LastTermination != nil {
		c.fatal = ClassifyTermination(obs.Minor, obs.ClusterID, obs.Pod.Container.LastTermination.Message)
	}
	for _, r := range rules {
		if res, ok := r(c); ok {
			return c.finish(res)
		}
	}
	return c.finish(c.healthy())
}

// classifier carries one Classify call's inputs and the timers still running.
type classifier struct {
	obs   Observation
	g     Graces
	fatal Match
	// recheck is the earliest moment a running grace ends.
	recheck time.Duration
}

func (c *classifier) finish(r Result) Result {
	r.Fatal = c.fatal
	r.ForceDelete = false
	if r.Action == "" {
		r.Action = ActionNone
	}
	if r.RecheckAfter == 0 {
		r.RecheckAfter = c.recheck
	}
	return r
}

// elapsed reports whether grace has passed since start; if not, it records when it will.
func (c *classifier) elapsed(start time.Time, grace time.Duration) bool {
	if start.IsZero() {
		return false
	}
	left := start.Add(grace).Sub(c.obs.Now)
	if left <= 0 {
		return true
	}
	if c.recheck == 0 || left < c.recheck {
		c.recheck = left
	}
	return false
}

func unhealthy(reason, msg string, action Action) Result {
	return Result{Status: metav1.ConditionFalse, Reason: reason, Message: msg, Action: action}
}

func (c *classifier) dormant() (Result, bool) {
	if !c.obs.Dormant {
		return Result{}, false
	}
	return Result{Status: metav1.ConditionTrue, Reason: ReasonHealthy,
		Message: "the member is dormant: it has no Pod by design"}, true
}

// memoryDataLost: a tmpfs data dir dies with its Pod, so a Memory member whose Pod is gone,
// replaced, failed, evicted or being deleted has lost its data. Its Pod is never recreated: a
// new, empty member under the old identity would be refused by etcd or, worse, accepted.
func (c *classifier) memoryDataLost() (Result, bool) {
	o := c.obs
	if !o.Memory || o.RecordedPodUID == "" {
		return Result{}, false
	}
	const suffix = "; this Memory member's data went with it, so it is replaced, never restarted"
	p := o.Pod
	var what string
	switch {
	case p == nil:
		what = "the Pod was deleted"
	case p.UID != o.RecordedPodUID:
		what = "the Pod was replaced (its UID changed)"
	case p.Reason == "Evicted":
		what = "the Pod was evicted"
	case p.Phase == corev1.PodFailed:
		what = "the Pod failed"
	case !p.DeletionTimestamp.IsZero():
		what = "the Pod is being deleted"
	default:
		return Result{}, false
	}
	return unhealthy(ReasonDataLost, what+suffix, ActionReplace), true
}

// removedFromCluster: the member was added to etcd and etcd no longer lists it, so someone else
// removed it. Its data dir can never rejoin; the replacement needs no MemberRemove.
func (c *classifier) removedFromCluster() (Result, bool) {
	e := c.obs.Etcd
	if !e.MemberListKnown || !e.Added || e.InMemberList {
		return Result{}, false
	}
	return unhealthy(ReasonRemovedFromCluster,
		"etcd's member list no longer has this member: it was removed from the cluster by someone else, so it is replaced", ActionReplace), true
}

// corruptAlarm: etcd's corruption checks raised CORRUPT naming this member.
func (c *classifier) corruptAlarm() (Result, bool) {
	if !c.obs.Etcd.CorruptAlarm {
		return Result{}, false
	}
	return unhealthy(ReasonDataCorrupt,
		"etcd raised a CORRUPT alarm naming this member: its data differs from its peers', so it is replaced and the alarm disarmed once it is gone", ActionReplace), true
}

// classifiedExit: two consecutive terminations matching the same data-loss, corruption or
// removal pattern. One alone is not enough: a member that is killed while its peers restart
// may print a matching line once and then recover.
func (c *classifier) classifiedExit() (Result, bool) {
	p := c.obs.Pod
	// A member that is Ready again serves; past exits in lastState do not condemn it.
	if p == nil || p.Ready || !c.fatal.Class.Replaceable() || p.Container.PreviousTermination == nil {
		return Result{}, false
	}
	prev := ClassifyTermination(c.obs.Minor, c.obs.ClusterID, p.Container.PreviousTermination.Message)
	if prev.Pattern != c.fatal.Pattern {
		return Result{}, false
	}
	msg := fmt.Sprintf("etcd exited twice in a row with a fatal error (pattern %s): %s; the member is replaced",
		c.fatal.Pattern, c.fatal.Description)
	return unhealthy(string(c.fatal.Class), msg, ActionReplace), true
}

// nodeLost reports whether a Node is gone, or NotReady or unreachable for at least grace.
// Unknown since-times count from now, which starts the timer rather than firing it.
func (c *classifier) nodeLost(n *Node, grace time.Duration) bool {
	if n == nil {
		return false
	}
	if n.Gone {
		return true
	}
	if n.Ready && !n.Unreachable {
		return false
	}
	since := n.NotReadySince
	if since.IsZero() {
		since = c.obs.Now
	}
	return c.elapsed(since, grace)
}

// terminatingOnLostNode: a Pod that stays Terminating past its grace on a NotReady or
// unreachable Node cannot be confirmed dead. It is never force-deleted (if the node returns,
// etcd could run twice on one volume); the member gets a new identity instead, and its removal
// from etcd makes the old one harmless.
func (c *classifier) terminatingOnLostNode() (Result, bool) {
	p := c.obs.Pod
	if p == nil || p.DeletionTimestamp.IsZero() || p.Node == nil || (p.Node.Ready && !p.Node.Unreachable && !p.Node.Gone) {
		return Result{}, false
	}
	if !c.elapsed(p.DeletionTimestamp, c.g.Terminating) {
		return Result{}, false
	}
	return unhealthy(ReasonNodeLost,
		fmt.Sprintf("the Pod is stuck terminating on node %s, which is not ready; it is not force-deleted, the member is replaced under a new identity", p.Node.Name),
		ActionReplace), true
}

// pendingOnLostNode: a Pending Pod whose volume is pinned to a Node that is gone or NotReady
// can never start; only a new PVC elsewhere helps.
func (c *classifier) pendingOnLostNode() (Result, bool) {
	p := c.obs.Pod
	if p == nil || p.Phase != corev1.PodPending || !p.DeletionTimestamp.IsZero() || !c.nodeLost(c.obs.PVNode, c.g.NodeLost) {
		return Result{}, false
	}
	return unhealthy(ReasonNodeLost,
		fmt.Sprintf("the Pod is pending and its volume is bound to node %s, which is gone or not ready; the member is replaced with a new volume elsewhere", c.obs.PVNode.Name),
		ActionReplace), true
}

// podFailed: a PVC member's Pod that Failed (evicted, node shutdown) is recreated in place;
// the data on the PVC is intact and the member keeps its identity.
func (c *classifier) podFailed() (Result, bool) {
	p := c.obs.Pod
	if c.obs.Memory || p == nil || p.Phase != corev1.PodFailed {
		return Result{}, false
	}
	why := "failed"
	if p.Reason != "" {
		why = "failed (" + p.Reason + ")"
	}
	return unhealthy(ReasonPodFailed,
		"the Pod "+why+"; it is recreated with the same volume and identity", ActionRecreatePod), true
}

// podMissing: a PVC member whose Pod is gone is recreated with the same identity. It is not a
// health problem by itself.
func (c *classifier) podMissing() (Result, bool) {
	if c.obs.Memory || c.obs.Pod != nil {
		return Result{}, false
	}
	return Result{Status: metav1.ConditionTrue, Reason: ReasonHealthy,
		Message: "no Pod: it is created with the member's volume and identity", Action: ActionRecreatePod}, true
}

// unschedulable: Pending for other reasons. Replacing would not help (the new Pod would have
// the same constraints), so this is only reported.
func (c *classifier) unschedulable() (Result, bool) {
	p := c.obs.Pod
	if p == nil || p.Phase != corev1.PodPending || !p.Unschedulable || !p.DeletionTimestamp.IsZero() {
		return Result{}, false
	}
	since := p.UnschedulableSince
	if since.IsZero() {
		since = p.CreatedAt
	}
	if !c.elapsed(since, c.g.Pending) {
		return Result{}, false
	}
	msg := "the Pod cannot be scheduled; fix the member's scheduling constraints or add capacity (no replacement: a new Pod would have the same constraints)"
	if p.SchedulingMessage != "" {
		msg = "the Pod cannot be scheduled: " + p.SchedulingMessage + "; fix the member's scheduling constraints or add capacity (no replacement: a new Pod would have the same constraints)"
	}
	r := unhealthy(ReasonUnschedulable, msg, ActionNone)
	r.Degraded = DegradedMemberUnschedulable
	return r, true
}

// failing reports whether the Pod is up but its member is not Ready.
func failing(p *Pod) bool {
	return p != nil && p.DeletionTimestamp.IsZero() && !p.Ready && p.Phase != corev1.PodPending
}

// oomKilled: a member killed for memory would be killed again after a replacement, so it is not
// replaced; the condition stays True and the cluster is Degraded with advice.
func (c *classifier) oomKilled() (Result, bool) {
	p := c.obs.Pod
	if !failing(p) || p.Container.LastTermination == nil || p.Container.LastTermination.Reason != "OOMKilled" {
		return Result{}, false
	}
	r := Result{Status: metav1.ConditionTrue, Reason: ReasonHealthy,
		Message:  "etcd was OOMKilled: not replaced, a replacement would run out of memory too; raise spec.resources.limits.memory (or lower the keyspace size)",
		Degraded: DegradedMembersUnhealthy}
	return r, true
}

// damagedData: a PVC member that ran on its data dir before, whose Pod was recreated with the
// template it ran (not rolled to a new one), and whose etcd has failed at every start in this
// Pod, at least twice, never Ready. Nothing but the data dir differs from when it ran, so the
// data is taken as damaged, whatever etcd printed (docs/design/healing.md, "Damaged data"): the
// known corruption patterns are only some of the ways damaged files make etcd fail. Two
// exceptions are not the data's fault: etcd saying its flags are wrong (Misconfigured), and a
// kill by a signal (a liveness probe, the kubelet), which says nothing about why etcd did not
// come up.
func (c *classifier) damagedData() (Result, bool) {
	p := c.obs.Pod
	if c.obs.Memory || !c.obs.DataExpected || !failing(p) || p.WasReadyWithTemplate || !p.RanTemplate || !p.TemplateCurrent {
		return Result{}, false
	}
	k := p.Container
	// The first start of a Pod's container counts 0 restarts: two failed starts are a restart
	// count of 1 or more with the container down again.
	if k.Running || k.LastTermination == nil || k.RestartCount < 1 || killed(k.LastTermination) ||
		c.fatal.Class == ClassMisconfigured || c.misconfigured(k.PreviousTermination) {
		return Result{}, false
	}
	reason := ReasonDataCorrupt
	if c.fatal.Class.Replaceable() {
		reason = string(c.fatal.Class)
	}
	msg := fmt.Sprintf("etcd failed at each of %d starts since its Pod was recreated with the template it ran before, on the data dir it wrote%s; the data is taken as damaged and the member is replaced",
		k.RestartCount+1, c.exitNote())
	return unhealthy(reason, msg, ActionReplace), true
}

// killed reports a termination by a signal (exit code 128+n, as container runtimes report it).
func killed(t *Termination) bool {
	return t.ExitCode >= 128
}

// misconfigured reports a termination whose message says etcd's flags are wrong.
func (c *classifier) misconfigured(t *Termination) bool {
	return t != nil && ClassifyTermination(c.obs.Minor, c.obs.ClusterID, t.Message).Class == ClassMisconfigured
}

// startFailed: a Pod with a new template that has never been Ready within memberStartGrace.
// A roll halts rather than replacing: a replacement would run the same template. The cluster
// controller replaces a new member whose etcd never started, after a back-off.
func (c *classifier) startFailed() (Result, bool) {
	p := c.obs.Pod
	if !failing(p) || p.WasReadyWithTemplate || p.RanTemplate || !p.TemplateCurrent || p.AwaitingMembership {
		return Result{}, false
	}
	if !c.elapsed(p.CreatedAt, c.g.MemberStart) {
		return Result{}, false
	}
	msg := fmt.Sprintf("the Pod has not become Ready within memberStartGrace (%s) with the member's current template; a rollout halts here, and a new member whose etcd never started is replaced after a back-off", c.g.MemberStart)
	msg += c.exitNote()
	r := unhealthy(ReasonStartFailed, msg, ActionHaltRollout)
	r.Degraded = DegradedMemberStartFailed
	return r, true
}

// crashLoop: a member that was Ready with its current template, in this Pod or an earlier one,
// and is not Ready for memberFailureGrace, or restarted CrashLoopRestarts times within
// CrashLoopWindow.
func (c *classifier) crashLoop() (Result, bool) {
	p := c.obs.Pod
	if !failing(p) || (!p.WasReadyWithTemplate && !p.RanTemplate) {
		return Result{}, false
	}
	f := c.obs.FirstFailure
	if f.At.IsZero() {
		return Result{}, false
	}
	restartLoop := f.RestartCount != nil && p.Container.RestartCount-*f.RestartCount >= CrashLoopRestarts &&
		c.obs.Now.Sub(f.At) <= CrashLoopWindow
	var msg string
	switch {
	case restartLoop:
		msg = fmt.Sprintf("etcd restarted %d times or more within %s", CrashLoopRestarts, CrashLoopWindow)
	case c.elapsed(f.At, c.g.MemberFailure):
		msg = fmt.Sprintf("the member has not been Ready for memberFailureGrace (%s)", c.g.MemberFailure)
	default:
		return Result{}, false
	}
	return unhealthy(ReasonCrashLoop, msg+c.exitNote()+"; the member is replaced", ActionReplace), true
}

// exitNote names the last exit's classification, when there is one, for crash loop and start
// failure messages.
func (c *classifier) exitNote() string {
	if c.fatal.Class == ClassNone {
		return ""
	}
	return fmt.Sprintf(" (last exit: %s, pattern %s)", c.fatal.Description, c.fatal.Pattern)
}

// unreachable: the Pod is Ready but the operator cannot reach etcd on it. Nothing destructive
// follows: the problem may be the operator's network, not the member.
func (c *classifier) unreachable() (Result, bool) {
	p := c.obs.Pod
	if p == nil || !p.Ready || !c.obs.Etcd.Unreachable {
		return Result{}, false
	}
	return Result{Status: metav1.ConditionUnknown, Reason: ReasonUnreachable,
		Message: "the Pod is Ready but the operator cannot reach etcd on it; nothing destructive is done"}, true
}

// healthy is the default, with notes for the states that are watched but not failures.
func (c *classifier) healthy() Result {
	r := Result{Status: metav1.ConditionTrue, Reason: ReasonHealthy, Message: "etcd is running"}
	p := c.obs.Pod
	switch {
	case p == nil:
		r.Message = "no Pod yet"
	case c.fatal.Class.Replaceable():
		r.Message = fmt.Sprintf("etcd's last exit matched pattern %s (%s); the member is replaced if the next exit matches too", c.fatal.Pattern, c.fatal.Description)
	case p.AwaitingMembership && !p.Ready:
		r.Message = "the Pod is prepared; the data-dir guard starts etcd once the member is added to etcd"
	case p != nil && !p.Ready:
		r.Message = "etcd is not Ready yet" + c.exitNote()
	case c.obs.Etcd.Lagging:
		r.Message = "etcd is running; its applied index is behind the leader's"
	}
	return r
}

// OrphanMember decides about an etcd member that no EtcdMember and no PVC explains
// (docs/design/membership-flows.md, "Orphan etcd members"; the planner times them itself and does
// not call this): remove it once it has been seen for OrphanMemberGrace. firstSeen is when
// the caller first saw it; recheck is the time left otherwise.
func OrphanMember(firstSeen, now time.Time) (remove bool, recheck time.Duration) {
	left := firstSeen.Add(OrphanMemberGrace).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}
