package membership

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Next returns the one step to take for s, first match wins (docs/design/membership-flows.md, "Planner order"). See the
// package documentation for the order. A step that would start etcd waits while TLS material
// the spec asks for is missing.
func Next(s Scope) Action {
	return holdForTLS(&s, next(s))
}

func next(s Scope) Action {
	if a, ok := finishInterrupted(&s); ok {
		return a
	}
	if s.ClusterID == "" {
		return bootstrap(&s)
	}
	if s.Target == 0 && len(s.Running()) == 0 {
		return Action{Kind: KindNone, Reason: ReasonPaused, Message: pausedMessage(&s)}
	}
	// A paused cluster has no running member to answer MemberList: waking needs no etcd.
	if a, ok := wake(&s); ok {
		return a
	}
	if !s.Etcd.Known {
		return Action{Kind: KindWait, Reason: progressReason(&s, ReasonScalingUp),
			Message: "waiting for etcd to answer MemberList", RequeueAfter: MembershipPoll}
	}
	if a, ok := replace(&s); ok {
		return a
	}
	if a, ok := promote(&s); ok {
		return a
	}
	if a, ok := scale(&s); ok {
		return a
	}
	if a, ok := roll(&s); ok {
		return a
	}
	if a, ok := storage(&s); ok {
		return a
	}
	return Action{Kind: KindNone, Reason: ReasonReconciled, Message: fmt.Sprintf("%d of %d members running", len(s.Running()), s.Target)}
}

// finishInterrupted finds a step a previous pass (or a crashed operator) started: removals,
// pending members, orphan learners and orphan PVCs.
func finishInterrupted(s *Scope) (Action, bool) {
	if !s.Etcd.Known {
		return readopt(s) // every other rule below needs etcd's member list
	}
	members := slices.Clone(s.Members)
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })

	// A member the operator decided to remove: finish the removal.
	for _, m := range members {
		if m.RemovalReason == "" {
			continue
		}
		e, inEtcd := s.EtcdMemberOf(m)
		if !inEtcd && m.Deleting {
			continue // the member controller releases its finalizer
		}
		return removeAction(s, m, e, inEtcd, m.RemovalReason), true
	}
	// A pending member: add it as a learner, or just patch it if the add already happened.
	if s.ClusterID != "" {
		for _, m := range members {
			if !m.Pending || m.Bootstrap || m.Deleting || m.Dormant {
				continue
			}
			return join(s, m), true
		}
	}
	// An orphan PVC whose member etcd still lists (re-adopted before an orphan learner goes).
	if a, ok := readopt(s); ok {
		return a, true
	}
	// An etcd member no EtcdMember explains: a learner added by an operator that crashed before
	// it patched the member it added it for, and whose member was then deleted; or a member whose
	// EtcdMember was deleted around the finalizer. A member whose PVC survives is left for
	// re-adoption instead: its data may be the cluster's. Learners first, as they cost no quorum.
	orphanable := s.Learners()
	if s.ClusterID != "" {
		// Before the cluster ID is latched, bootstrap judges the voters.
		orphanable = append(orphanable, s.Voters()...)
	}
	for _, e := range orphanable {
		if _, ok := s.MemberOf(e); ok || hasPVCOf(s, e) {
			continue
		}
		kind := "learner"
		if !e.IsLearner {
			kind = "voter"
		}
		seen, ok := s.Etcd.FirstSeen[e.ID]
		if !ok || s.Now.Sub(seen) < s.orphanGrace() {
			wait := s.orphanGrace()
			if ok {
				wait -= s.Now.Sub(seen)
			}
			return Action{Kind: KindWait, MemberID: e.ID, Reason: ReasonScalingUp,
				Message:      fmt.Sprintf("%s %s has no EtcdMember; removing it once %s have passed", kind, s.DisplayName(e), s.orphanGrace()),
				RequeueAfter: wait}, true
		}
		a := Action{Kind: KindRemoveOrphan, MemberID: e.ID, Reason: ReasonScalingUp,
			Message: fmt.Sprintf("removing %s %s, which no EtcdMember explains", kind, s.DisplayName(e))}
		return gated(s, a, quorum.Remove(s.DisplayName(e))), true
	}
	// A CORRUPT alarm outlives the member it names, and it makes etcd refuse writes
	// cluster-wide: disarm it once the member is out of etcd.
	if alarms := corruptAlarmsToDisarm(s); len(alarms) > 0 {
		return Action{Kind: KindDisarmCorrupt, MemberID: alarms[0].MemberID, Reason: ReasonReplacingMember,
			Message: fmt.Sprintf("disarming the CORRUPT alarm of removed member %s", etcdclient.FormatID(alarms[0].MemberID))}, true
	}
	// The PVC of a member that is gone from Kubernetes and from etcd.
	for _, p := range orphanPVCs(s) {
		return Action{Kind: KindDeletePVC, PVC: p.Name, Member: p.Member, Reason: ReasonScalingDown,
			Message: fmt.Sprintf("deleting PVC %s of removed member %s", p.Name, p.Member)}, true
	}
	return Action{}, false
}

// hasPVCOf reports whether a data PVC names etcd member e by its name or peer URL.
func hasPVCOf(s *Scope, e etcdclient.Member) bool {
	return slices.ContainsFunc(s.PVCs, func(p PVC) bool {
		return p.Member != "" && (e.Name == p.Member || slices.ContainsFunc(e.PeerURLs, func(u string) bool { return NameFromPeerURL(u) == p.Member }))
	})
}

// orphanPVCs are PVCs whose member is neither an EtcdMember (by name or UID) nor in etcd's member
// list, sorted by name. A PVC whose member etcd still lists is left for re-adoption (docs/design/membership-flows.md, "Re-adoption of orphan PVCs").
func orphanPVCs(s *Scope) []PVC {
	var out []PVC
	for _, p := range s.PVCs {
		// A foreign PVC holds another cluster's data (a Retain PVC of an earlier cluster of
		// this name): never this cluster's to delete.
		if p.Deleting || p.Member == "" || p.Foreign {
			continue
		}
		if slices.ContainsFunc(s.Members, func(m Member) bool { return m.Name == p.Member || (p.MemberUID != "" && m.UID == p.MemberUID) }) {
			continue
		}
		if slices.ContainsFunc(s.Etcd.Members, func(e etcdclient.Member) bool {
			return e.Name == p.Member || slices.ContainsFunc(e.PeerURLs, func(u string) bool { return NameFromPeerURL(u) == p.Member })
		}) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b PVC) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// join adds pending member m as a learner (gated), or, when etcd already lists its peer URL,
// only patches its initialCluster (a previous pass crashed between the two).
func join(s *Scope, m Member) Action {
	_, inEtcd := s.EtcdMemberOf(m)
	a := Action{
		Kind:           KindJoin,
		Member:         m.Name,
		PeerURL:        m.PeerURL,
		InEtcd:         inEtcd,
		InitialCluster: InitialCluster(s.Etcd.Members, m.Name, m.PeerURL),
		Reason:         progressReason(s, ReasonScalingUp),
		Message:        fmt.Sprintf("adding %s as a learner", m.Name),
	}
	if inEtcd {
		a.Message = fmt.Sprintf("giving learner %s its initial cluster", m.Name)
		return a
	}
	a = gated(s, a, quorum.AddLearner())
	if a.Kind != KindJoin {
		return a
	}
	if v, wait := strictReconfigWait(s); wait > 0 {
		return Action{Kind: KindWait, Member: m.Name, Reason: a.Reason, RequeueAfter: wait,
			Message: fmt.Sprintf("adding %s as a learner once voter %s has been up for %s (etcd's strict reconfiguration check)", m.Name, v, StrictReconfigSettle)}
	}
	return a
}

// strictReconfigWait is how long until etcd's strict reconfiguration check accepts a member
// add, and the voter waited for; zero when it already would. etcd (3.5.35, 3.6, 3.7) accepts an
// add once its leader has been connected for StrictReconfigSettle to enough voters that, with
// itself, they would be a quorum of the grown cluster; a single voter is always allowed. The
// operator sees a member start only after the leader has connected to it, so a voter's
// StartedSeen errs late, never early; one started before the operator looked counts as settled.
func strictReconfigWait(s *Scope) (string, time.Duration) {
	voters := s.Voters()
	if len(voters) <= 1 {
		return "", 0
	}
	type settling struct {
		name string
		at   time.Time
	}
	var pending []settling
	connected := 0
	for _, v := range voters {
		seen, ok := s.Etcd.StartedSeen[v.ID]
		switch {
		case v.ID == s.Etcd.Leader || (ok && !seen.Add(StrictReconfigSettle).After(s.Now)):
			connected++ // the leader needs no connection to itself
		case ok:
			pending = append(pending, settling{s.DisplayName(v), seen.Add(StrictReconfigSettle)})
		}
	}
	missing := quorum.Of(len(voters)+1) - connected
	if missing <= 0 || missing > len(pending) {
		return "", 0 // satisfied, or no wait would satisfy it: etcd judges, the gate has spoken
	}
	slices.SortFunc(pending, func(a, b settling) int { return a.at.Compare(b.at) })
	p := pending[missing-1]
	return p.name, p.at.Sub(s.Now)
}

// bootstrap walks B0–B4 (docs/design/membership-flows.md, "Bootstrap"). Only called while no cluster ID is latched.
func bootstrap(s *Scope) Action {
	var seeds, others []Member
	for _, m := range s.Members {
		if m.Bootstrap {
			seeds = append(seeds, m)
		} else {
			others = append(others, m)
		}
	}
	switch {
	case len(s.Members) == 0 && s.Target == 0:
		return Action{Kind: KindNone, Reason: ReasonPaused, Message: "replicas is 0 and no data has been written"}
	case len(s.Members) == 0:
		return Action{Kind: KindCreateSeed, Reason: ReasonWaitingForSeed, Message: "creating the seed member"}
	case len(seeds) != 1 || len(others) > 0:
		return Action{Kind: KindWait, Reason: ReasonBootstrapping, RequeueAfter: MembershipPoll,
			Message: fmt.Sprintf("bootstrap needs exactly one seed member and no other, found %s", names(s.Members))}
	}
	seed := seeds[0]
	if seed.Pending {
		return Action{Kind: KindInitSeed, Member: seed.Name, InitialCluster: SeedInitialCluster(seed.Name, seed.PeerURL),
			Reason: ReasonWaitingForSeed, Message: fmt.Sprintf("giving seed %s its initial cluster", seed.Name)}
	}
	if !seed.PodRunning {
		return Action{Kind: KindWait, Member: seed.Name, Reason: ReasonWaitingForSeed, RequeueAfter: MembershipPoll,
			Message: fmt.Sprintf("waiting for the Pod of seed %s to run", seed.Name) + because(seed)}
	}
	if !s.Etcd.Known {
		return Action{Kind: KindWait, Member: seed.Name, Reason: ReasonWaitingForSeed, RequeueAfter: MembershipPoll,
			Message: fmt.Sprintf("waiting for seed %s to answer MemberList", seed.Name)}
	}
	e, ok := s.EtcdMemberOf(seed)
	if len(s.Etcd.Members) != 1 || !ok {
		return Action{Kind: KindWait, Member: seed.Name, Reason: ReasonBootstrapping, RequeueAfter: MembershipPoll,
			Message: fmt.Sprintf("seed %s must be the only member of its etcd cluster, but etcd lists %d members", seed.Name, len(s.Etcd.Members))}
	}
	return Action{Kind: KindLatchClusterID, Member: seed.Name, MemberID: e.ID, ClusterID: SeedClusterID(e.ID),
		Reason: ReasonBootstrapping, Message: fmt.Sprintf("seed %s formed the cluster", seed.Name)}
}

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
	type candidate struct {
		m      Member
		reason string
		inEtcd bool
		e      etcdclient.Member
	}
	var cs []candidate
	for _, m := range s.Members {
		if m.RemovalReason != "" || m.Dormant {
			continue
		}
		var reason string
		switch {
		case m.Deleting && m.AllowDeletion:
			reason = RemovalReasonDeletionAllowed
		case m.Deleting:
			continue // held by the finalizer until a person allows it
		case m.ReplaceAnnotated:
			reason = RemovalReasonReplace
		case m.Unhealthy && slices.Contains(replaceable, m.HealthyReason):
			reason = m.HealthyReason
		case neverStarted(s, m):
			reason = health.ReasonStartFailed
		default:
			continue
		}
		e, inEtcd := s.etcdMemberByIdentity(m)
		if answering(s, e, inEtcd) && (reason == health.ReasonCrashLoop || reason == health.ReasonNodeLost) {
			// It serves again (its Pod came back, its Node returned) and the verdict is a
			// pass behind: a member with its data intact is never replaced for a past outage.
			continue
		}
		cs = append(cs, candidate{m, reason, inEtcd, e})
	}
	if len(cs) == 0 {
		return Action{}, false
	}
	slices.SortFunc(cs, func(a, b candidate) int {
		if a.inEtcd != b.inEtcd {
			if !a.inEtcd {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.m.Name, b.m.Name)
	})
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

// promote promotes a learner that has an EtcdMember, or waits for it to start.
func promote(s *Scope) (Action, bool) {
	for _, e := range s.Learners() {
		m, ok := s.MemberOf(e)
		if !ok || m.RemovalReason != "" || m.Deleting {
			continue
		}
		if !e.Started() {
			// A learner that never starts is Healthy=False/StartFailed, and replace (above)
			// removes it after the back-off (docs/design/healing.md, "Replacement back-off").
			return Action{Kind: KindWait, Member: m.Name, MemberID: e.ID, Reason: progressReason(s, ReasonScalingUp),
				RequeueAfter: MembershipPoll, Message: fmt.Sprintf("waiting for learner %s to start", m.Name) + because(m)}, true
		}
		a := Action{Kind: KindPromote, Member: m.Name, MemberID: e.ID, Reason: ReasonPromotingLearner,
			Message: fmt.Sprintf("promoting learner %s", m.Name)}
		return gated(s, a, quorum.Promote(s.DisplayName(e))), true
	}
	return Action{}, false
}

// scale moves the running member count towards the target: wake, create, pause or remove.
func scale(s *Scope) (Action, bool) {
	running := s.Running()
	target := int(s.Target)
	switch {
	case len(running) < target:
		return scaleUp(s)
	case len(running) > target && target == 0 && len(running) == 1:
		m := running[0]
		return Action{Kind: KindSetDormant, Member: m.Name, Reason: ReasonScalingDown,
			Message: fmt.Sprintf("pausing: making %s dormant", m.Name)}, true
	case len(running) > max(target, 1) && surging(s, running):
		return Action{}, false // the roll removes the outdated member once the new one settled
	case len(running) > max(target, 1):
		return scaleDown(s, running)
	}
	return Action{}, false
}

func scaleUp(s *Scope) (Action, bool) {
	if slices.ContainsFunc(s.Members, Member.Leaving) {
		return Action{Kind: KindWait, Reason: progressReason(s, ReasonScalingUp), RequeueAfter: MembershipPoll,
			Message: "waiting for a member being removed to be gone"}, true
	}
	a := Action{Kind: KindCreateMember, Reason: progressReason(s, ReasonScalingUp),
		Message: fmt.Sprintf("adding member %d of %d", len(s.Running())+1, s.Target)}
	// The new member becomes a learner next pass; create it only when that add would be
	// allowed, so that a cluster without quorum does not accumulate pending members.
	return gated(s, a, quorum.AddLearner()), true
}

// wake resumes a paused cluster: the dormant member is woken before any member is added.
func wake(s *Scope) (Action, bool) {
	if s.Target == 0 || len(s.Running()) >= int(s.Target) {
		return Action{}, false
	}
	for _, m := range s.Members {
		if !m.Dormant || m.Deleting {
			continue
		}
		msg := fmt.Sprintf("resuming: waking %s", m.Name)
		if rejected := wakeRejection(s, m); rejected != "" {
			// Held until a spec the rules allow is latched (at the deadline, or at once with
			// kubectl etcd retry); looked at again at every watch event and VersionRecheck.
			return Action{Kind: KindWait, Member: m.Name, Reason: ReasonResuming, Message: msg,
				RequeueAfter: VersionRecheck, VersionRejection: rejected}, true
		}
		return Action{Kind: KindWake, Member: m.Name, Reason: ReasonResuming, Message: msg}, true
	}
	return Action{}, false
}

func scaleDown(s *Scope, running []Member) (Action, bool) {
	victim := RankVictims(s, running)[0]
	e, inEtcd := s.EtcdMemberOf(victim)
	if a, ok := moveLeadershipFrom(s, victim, e, inEtcd, ReasonScalingDown); ok {
		return a, true
	}
	return removeAction(s, victim, e, inEtcd, RemovalReasonScaleDown), true
}

// moveLeadershipFrom moves leadership away from a member about to be removed, when it leads and
// a healthy voter can take over: clients then see a planned hand-over instead of an election.
func moveLeadershipFrom(s *Scope, victim Member, e etcdclient.Member, inEtcd bool, reason string) (Action, bool) {
	if !inEtcd || e.IsLearner || e.ID != s.Etcd.Leader {
		return Action{}, false
	}
	to, ok := leaderTransferee(s, e.ID)
	if !ok {
		return Action{}, false
	}
	a := Action{Kind: KindMoveLeader, Member: victim.Name, MemberID: to.ID, Reason: reason,
		Message: fmt.Sprintf("moving leadership from %s to %s before removing it", victim.Name, s.DisplayName(to))}
	return gated(s, a, quorum.MoveLeader(s.DisplayName(to))), true
}

// removeAction removes member m (etcd member e when inEtcd) and deletes its EtcdMember.
func removeAction(s *Scope, m Member, e etcdclient.Member, inEtcd bool, reason string) Action {
	a := Action{Kind: KindRemove, Member: m.Name, InEtcd: inEtcd, RemovalReason: reason, Reason: ReasonScalingDown,
		Message: fmt.Sprintf("removing %s", m.Name)}
	if reason != RemovalReasonScaleDown {
		a.Reason, a.Message = ReasonReplacingMember, fmt.Sprintf("replacing %s (%s)", m.Name, reason)
	}
	if !inEtcd {
		return a
	}
	a.MemberID = e.ID
	return gated(s, a, quorum.Remove(s.DisplayName(e)))
}

// leaderTransferee is the healthy, updated voter (other than from) with the highest applied
// index: the one that can take over soonest without a roll disrupting it next.
func leaderTransferee(s *Scope, from uint64) (etcdclient.Member, bool) {
	var best etcdclient.Member
	var bestKey [2]uint64
	found := false
	for _, v := range s.Voters() {
		if v.ID == from || !s.HealthyVoter(v) {
			continue
		}
		updated := uint64(0)
		if m, ok := s.MemberOf(v); ok && m.current() {
			updated = 1
		}
		key := [2]uint64{updated, s.Etcd.Statuses[v.ID].RaftAppliedIndex}
		if !found || key[0] > bestKey[0] || (key[0] == bestKey[0] && key[1] > bestKey[1]) {
			best, bestKey, found = v, key, true
		}
	}
	return best, found
}

// gated returns a if the gate allows it over s's membership, and otherwise a Blocked action whose
// message names the members that are not healthy.
func gated(s *Scope, a Action, q quorum.Action) Action {
	d := quorum.Check(s.QuorumView(), q)
	out := gate(a, d)
	if !d.Allowed {
		if starting, ok := onlyStartingVoters(s); ok {
			// Normal progress, not a fault: no warning, just the step after this one.
			return Action{Kind: KindWait, Member: a.Member, MemberID: a.MemberID, Gate: &d, Reason: a.Reason,
				RequeueAfter: MembershipPoll, Message: fmt.Sprintf("%s once %s %s Ready", a.Message, strings.Join(starting, ", "), isAre(len(starting)))}
		}
		if bad := unhealthyVoters(s); len(bad) > 0 {
			out.Message += "; not healthy: " + strings.Join(bad, ", ")
		}
	}
	return out
}

// onlyStartingVoters names the voters that are not healthy, and reports whether every one of
// them has a running Pod whose etcd container started less than StartingVoterGrace ago: a
// learner just promoted, or a member just woken, on its way to Ready. A refusal caused only by
// them is waiting.
func onlyStartingVoters(s *Scope) ([]string, bool) {
	var out []string
	for _, e := range s.Voters() {
		if s.HealthyVoter(e) {
			continue
		}
		m, hasCR := s.MemberOf(e)
		if !hasCR || !m.PodRunning || m.Unhealthy || m.ContainerStarted.IsZero() || s.Now.Sub(m.ContainerStarted) >= StartingVoterGrace {
			return nil, false
		}
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out, len(out) > 0
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// unhealthyVoters names the voters that do not count as healthy, sorted.
func unhealthyVoters(s *Scope) []string {
	var out []string
	for _, v := range s.QuorumView().Voters {
		if !v.CountsHealthy() {
			out = append(out, v.Name)
		}
	}
	slices.Sort(out)
	return out
}

// progressReason says Bootstrapping instead of a scaling reason while the cluster forms.
func progressReason(s *Scope, reason string) string {
	switch {
	case s.Bootstrapping && reason == ReasonScalingUp:
		return ReasonBootstrapping
	case s.Rolling && reason == ReasonScalingUp:
		// The last member a roll restarted is coming back: still the roll, not a scale-up
		// (spec changes, scale-ups included, are adopted only once the roll converged).
		return ReasonRollingUpdate
	}
	return reason
}

func pausedMessage(s *Scope) string {
	for _, m := range s.Members {
		if m.Dormant {
			return fmt.Sprintf("paused; data kept in PVC data-%s of dormant member %s", m.Name, m.Name)
		}
	}
	return "paused"
}

// because quotes what the member's Ready condition says holds it back, so that the cluster's
// Progressing message names the cause (an unschedulable Pod, say) without a look at the member.
func because(m Member) string {
	if m.NotReadyMessage == "" {
		return ""
	}
	return ": " + m.NotReadyMessage
}

func names(ms []Member) string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
