package membership

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Staged joins (docs/design/membership-flows.md, "Staged joins"). A member's Pod takes seconds to
// be scheduled, get its volume and start its containers; in the plain flow all of that happens
// after the member was added to etcd, on every scale-up's critical path. When members run under
// the data-dir guard (Scope.Staging), a new member is instead given its initial cluster before it
// is added (KindStage): the member controller builds its Pod at once, and the guard holds etcd
// until a peer lists the member. The add (KindJoin) then comes when the quorum gate and etcd's
// strict reconfiguration check allow it, and etcd starts a moment later. While the planner waits
// for something else (a learner to start, a voter to turn Ready), it prepares the next member
// (prepareNext), so that preparation overlaps the wait.
//
// Nothing here changes etcd: a staged member is not in etcd's membership until its KindJoin, and
// one learner at a time, the quorum gate and one membership change per pass hold as before.

// RemovalReasonRestage is the removal-reason of a staged member whose initial cluster no longer
// matches etcd's membership (it changed after the member was staged): etcd would refuse to start
// it, so it goes before it was ever added, and a new member is prepared.
const RemovalReasonRestage = "Restage"

// staged reports a member whose Pod was built before it was added to etcd: it has its initial
// cluster, etcd (which answered) does not list it, and no etcd member ID was ever recorded for
// it. A member etcd listed once has a recorded ID; losing it later is RemovedFromCluster.
func (s *Scope) staged(m Member) bool {
	if m.Pending || m.Bootstrap || m.Dormant || m.Deleting || m.RemovalReason != "" || m.MemberID != 0 || !s.Etcd.Known {
		return false
	}
	_, inEtcd := s.EtcdMemberOf(m)
	return !inEtcd
}

// joining reports whether some member is on its way into etcd: pending (no initial cluster yet)
// or staged.
func (s *Scope) joining() bool {
	return slices.ContainsFunc(s.Members, func(m Member) bool {
		return (m.Pending && !m.Bootstrap && !m.Deleting && !m.Dormant) || s.staged(m)
	})
}

// stage gives pending member m its initial cluster ahead of its add: etcd's membership as it is
// now, plus m. Its Pod is built next, and its guard waits for the add.
func stage(s *Scope, m Member) Action {
	return Action{Kind: KindStage, Member: m.Name, PeerURL: m.PeerURL,
		InitialCluster: InitialCluster(s.Etcd.Members, m.Name, m.PeerURL),
		Reason:         progressReason(s, ReasonScalingUp),
		Message:        fmt.Sprintf("preparing %s: its Pod starts and waits to be added as a learner", m.Name)}
}

// joinStaged adds the staged member as a learner, gated as any add. It gives way (false) while a
// learner is in flight: that one is promoted first, and etcd admits one learner at a time. A staged
// member whose initial cluster no longer matches etcd's membership is removed instead (it was never
// in etcd): its Pod's --initial-cluster would not match what etcd reports, and etcd would refuse
// to start.
func joinStaged(s *Scope) (Action, bool) {
	members := slices.Clone(s.Members)
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })
	for _, m := range members {
		if !s.staged(m) {
			continue
		}
		if m.Spec != nil && m.Spec.InitialCluster != InitialCluster(s.Etcd.Members, m.Name, m.PeerURL) {
			return Action{Kind: KindRemove, Member: m.Name, RemovalReason: RemovalReasonRestage, Reason: progressReason(s, ReasonScalingUp),
				Message: fmt.Sprintf("removing staged %s, never added: etcd's membership changed since its Pod was built, so a new member is prepared", m.Name)}, true
		}
		if len(s.Learners()) > 0 {
			return Action{}, false
		}
		return join(s, m), true
	}
	return Action{}, false
}

// prepareNext returns the preparation step that can run while the pass would otherwise only wait
// for wait's reason: create the next member, when members are staged, the cluster has formed,
// etcd answers, fewer members run than the target, none is on its way in or out, and none is
// unhealthy (a failing cluster does not get more members to start). The new member is staged
// next pass (finishInterrupted). The action keeps wait's reason and says both.
func prepareNext(s *Scope, wait Action) (Action, bool) {
	if !s.Staging || s.ClusterID == "" || !s.Etcd.Known || len(s.Running()) >= int(s.Target) || s.joining() ||
		slices.ContainsFunc(s.Members, func(m Member) bool { return m.Leaving() || m.Unhealthy }) {
		return Action{}, false
	}
	return Action{Kind: KindCreateMember, Reason: wait.Reason,
		Message: fmt.Sprintf("%s; meanwhile preparing member %d of %d", wait.Message, len(s.Running())+1, s.Target)}, true
}

// preparedAhead reports whether members other than the seed are only ones prepared ahead of their
// add (at most one, never in etcd, with no recorded member ID): all a bootstrap may have besides
// its seed.
func preparedAhead(s *Scope, others []Member) bool {
	if len(others) > 1 {
		return false
	}
	for _, m := range others {
		if m.Bootstrap || m.MemberID != 0 || m.Deleting {
			return false
		}
		if _, inEtcd := s.EtcdMemberOf(m); inEtcd {
			return false
		}
	}
	return true
}

// prepareWhileSeedStarts prepares the second member while the pass would only wait for the seed
// to run or answer: created, then staged with the seed's own membership plus itself. Its Pod then
// starts while the seed does, and it is added once the cluster ID is latched and the seed is
// healthy (joinStaged). Without staging, or with one member wanted, it is wait.
func prepareWhileSeedStarts(s *Scope, seed Member, others []Member, wait Action) Action {
	return prepareSecond(s, seed, others, wait, ReasonBootstrapping)
}

// prepareSecond creates the second member of a cluster whose one member, first, is starting
// and cannot answer yet, then stages it with first's membership plus itself (reason on both).
// Without staging, with one member wanted, or with the second member past its staging, it is
// wait.
func prepareSecond(s *Scope, first Member, others []Member, wait Action, reason string) Action {
	if !s.Staging || s.Target < 2 {
		return wait
	}
	if len(others) == 0 {
		return Action{Kind: KindCreateMember, Reason: reason,
			Message: fmt.Sprintf("%s; meanwhile preparing member 2 of %d", wait.Message, s.Target)}
	}
	if m := others[0]; m.Pending {
		a := stage(s, m)
		a.InitialCluster = InitialCluster([]etcdclient.Member{{Name: first.Name, PeerURLs: []string{first.PeerURL}}}, m.Name, m.PeerURL)
		a.Reason = reason
		return a
	}
	return wait
}

// prepareWhileWokenStarts is prepareWhileSeedStarts for a resumed cluster: while the member just
// woken starts and etcd cannot answer yet, the next member is created, then staged with the woken
// member's membership plus itself (a paused cluster's etcd has that one member: docs/design/
// membership-flows.md, "Pause and resume"). Its Pod starts beside the woken one's; it is added
// only once etcd answers, the gate allows, and its initial cluster matches what etcd lists
// (joinStaged restages it otherwise). Any other state is wait.
func prepareWhileWokenStarts(s *Scope, wait Action) Action {
	var joined, others []Member
	for _, m := range s.Members {
		if m.MemberID != 0 || m.Dormant {
			joined = append(joined, m)
		} else {
			others = append(others, m)
		}
	}
	if len(joined) != 1 || !preparedAhead(s, others) {
		return wait
	}
	woken := joined[0]
	if woken.Pending || woken.Dormant || woken.Deleting || woken.Unhealthy || woken.Leaving() {
		return wait
	}
	return prepareSecond(s, woken, others, wait, wait.Reason)
}
