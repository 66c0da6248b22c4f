package membership

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Next returns the one step to take for s, first match wins (docs/design/membership-flows.md, "Planner order"). See the
// package documentation for the order. A step that would start etcd waits while TLS material
// the spec asks for is missing.
func Next(s Scope) Action {
	return holdForAccess(&s, holdForDefrag(&s, holdForTLS(&s, next(s))))
}

func next(s Scope) Action {
	// Ahead of every other rule, recovery included: etcd refuses the operator every change.
	if a, ok := holdForUnconfiguredAuth(&s); ok {
		return a
	}
	// Ahead of every other rule: without a quorum none of them can act, and the steps of a
	// recovery must not be undone by them (a dormant member woken, say).
	if a, ok := recoverQuorum(&s); ok {
		return a
	}
	if a, ok := accessRepair(&s); ok {
		return a
	}
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
		return prepareWhileWokenStarts(&s, Action{Kind: KindWait, Reason: progressReason(&s, ReasonScalingUp),
			Message: "waiting for etcd to answer MemberList", RequeueAfter: MembershipPoll})
	}
	if a, ok := replace(&s); ok {
		return a
	}
	if a, ok := joinStaged(&s); ok {
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
	if a, ok := enableAuth(&s); ok {
		return a
	}
	return Action{Kind: KindNone, Reason: ReasonReconciled, Message: fmt.Sprintf("%d of %d members running", len(s.Running()), s.Target)}
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
	if len(s.Members) == 0 {
		if a, ok := adoptRetained(s); ok {
			return a
		}
	}
	switch {
	case len(s.Members) == 0 && s.Target == 0:
		return Action{Kind: KindNone, Reason: ReasonPaused, Message: "replicas is 0 and no data has been written"}
	case len(s.Members) == 0:
		return Action{Kind: KindCreateSeed, Reason: ReasonWaitingForSeed, Message: "creating the seed member"}
	case len(seeds) != 1 || !preparedAhead(s, others):
		return Action{Kind: KindWait, Reason: ReasonBootstrapping, RequeueAfter: MembershipPoll,
			Message: fmt.Sprintf("bootstrap needs exactly one seed member and no other (but one prepared ahead of its add), found %s", names(s.Members))}
	}
	seed := seeds[0]
	if seed.Pending {
		return Action{Kind: KindInitSeed, Member: seed.Name, InitialCluster: SeedInitialCluster(seed.Name, seed.PeerURL),
			Reason: ReasonWaitingForSeed, Message: fmt.Sprintf("giving seed %s its initial cluster", seed.Name)}
	}
	if !seed.PodRunning {
		wait := Action{Kind: KindWait, Member: seed.Name, Reason: ReasonWaitingForSeed, RequeueAfter: MembershipPoll,
			Message: fmt.Sprintf("waiting for the Pod of seed %s to run", seed.Name) + because(seed)}
		if msg := restoreFailed(s); msg != "" {
			// The kubelet restarts the restore with back-off and the Pod watch reports each
			// attempt: nothing to poll for.
			wait.Reason, wait.Message, wait.RequeueAfter = ReasonRestoreFailed, msg, 0
		}
		return prepareWhileSeedStarts(s, seed, others, wait)
	}
	if !s.Etcd.Known {
		return prepareWhileSeedStarts(s, seed, others, Action{Kind: KindWait, Member: seed.Name, Reason: ReasonWaitingForSeed, RequeueAfter: MembershipPoll,
			Message: fmt.Sprintf("waiting for seed %s to answer MemberList", seed.Name)})
	}
	e, ok := s.EtcdMemberOf(seed)
	if len(s.Etcd.Members) != 1 || !ok {
		return Action{Kind: KindWait, Member: seed.Name, Reason: ReasonBootstrapping, RequeueAfter: MembershipPoll,
			Message: fmt.Sprintf("seed %s must be the only member of its etcd cluster, but etcd lists %d members", seed.Name, len(s.Etcd.Members))}
	}
	return Action{Kind: KindLatchClusterID, Member: seed.Name, MemberID: e.ID, ClusterID: SeedClusterID(e.ID),
		Reason: ReasonBootstrapping, Message: fmt.Sprintf("seed %s formed the cluster", seed.Name)}
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
			wait := Action{Kind: KindWait, Member: m.Name, MemberID: e.ID, Reason: progressReason(s, ReasonScalingUp),
				RequeueAfter: MembershipPoll, Message: fmt.Sprintf("waiting for learner %s to start", m.Name) + because(m)}
			if p, ok := prepareNext(s, wait); ok {
				return p, true
			}
			return wait, true
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
		return pause(s, running[0]), true
	case len(running) > max(target, 1) && surging(s, running):
		return Action{}, false // the roll removes the outdated member once the new one settled
	case len(running) > max(target, 1):
		return scaleDown(s, running)
	}
	return Action{}, false
}

// pause makes the last running member dormant, once no member is leaving: a removed member's
// EtcdMember keeps its finalizer until etcd's member list, which only the last member can
// answer, shows it gone, so a dormant last member would hold it, and its Pod, forever.
func pause(s *Scope, last Member) Action {
	if slices.ContainsFunc(s.Members, Member.Leaving) {
		return Action{Kind: KindWait, Reason: ReasonScalingDown, RequeueAfter: MembershipPoll,
			Message: "pausing: waiting for a member being removed to be gone before " + last.Name + " becomes dormant"}
	}
	return Action{Kind: KindSetDormant, Member: last.Name, Reason: ReasonScalingDown,
		Message: fmt.Sprintf("pausing: making %s dormant", last.Name)}
}

func scaleUp(s *Scope) (Action, bool) {
	if slices.ContainsFunc(s.Members, Member.Leaving) {
		return Action{Kind: KindWait, Reason: progressReason(s, ReasonScalingUp), RequeueAfter: MembershipPoll,
			Message: "waiting for a member being removed to be gone"}, true
	}
	a := Action{Kind: KindCreateMember, Reason: progressReason(s, ReasonScalingUp),
		Message: fmt.Sprintf("adding member %d of %d", len(s.Running())+1, s.Target)}
	// The new member becomes a learner next pass; create it only when that add would be
	// allowed, so that a cluster without quorum does not accumulate pending members. With staged
	// joins, a wait for voters that are only starting is time to prepare it.
	a = gated(s, a, quorum.AddLearner())
	if a.Kind == KindWait {
		if p, ok := prepareNext(s, a); ok {
			return p, true
		}
	}
	return a, true
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
