package membership

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// finishInterrupted finds a step a previous pass (or a crashed operator) started, in this
// order: removals, pending members, re-adoption of orphan PVCs, orphan etcd members, CORRUPT
// alarms of removed members, PVCs of removed members.
func finishInterrupted(s *Scope) (Action, bool) {
	if !s.Etcd.Known {
		return readopt(s) // every other rule below needs etcd's member list
	}
	members := slices.Clone(s.Members)
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })
	for _, rule := range []func() (Action, bool){
		func() (Action, bool) { return finishRemoval(s, members) },
		func() (Action, bool) { return joinPending(s, members) },
		// An orphan PVC whose member etcd still lists is re-adopted before an orphan learner goes.
		func() (Action, bool) { return readopt(s) },
		func() (Action, bool) { return removeOrphanMember(s) },
		func() (Action, bool) { return disarmRemovedCorrupt(s) },
		func() (Action, bool) { return deleteOrphanPVC(s) },
	} {
		if a, ok := rule(); ok {
			return a, true
		}
	}
	return Action{}, false
}

// finishRemoval finishes the removal of a member the operator decided to remove.
func finishRemoval(s *Scope, members []Member) (Action, bool) {
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
	return Action{}, false
}

// joinPending adds a pending member as a learner, or just patches it if the add already
// happened; with staged joins it stages it instead (the add comes in joinStaged). Before the
// cluster ID is latched, bootstrap handles the seed instead.
func joinPending(s *Scope, members []Member) (Action, bool) {
	if s.ClusterID == "" {
		return Action{}, false
	}
	for _, m := range members {
		if !m.Pending || m.Bootstrap || m.Deleting || m.Dormant {
			continue
		}
		if _, inEtcd := s.EtcdMemberOf(m); !inEtcd && s.Staging {
			return stage(s, m), true
		}
		return join(s, m), true
	}
	return Action{}, false
}

// removeOrphanMember removes an etcd member no EtcdMember explains, once the orphan grace has
// passed: a learner added by an operator that crashed before it patched the member it added it
// for, and whose member was then deleted; or a member whose EtcdMember was deleted around the
// finalizer. A member whose PVC survives is left for re-adoption instead: its data may be the
// cluster's. Learners first, as they cost no quorum.
func removeOrphanMember(s *Scope) (Action, bool) {
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
	return Action{}, false
}

// disarmRemovedCorrupt disarms a CORRUPT alarm whose member is out of etcd: the alarm outlives
// the member it names, and it makes etcd refuse writes cluster-wide.
func disarmRemovedCorrupt(s *Scope) (Action, bool) {
	alarms := corruptAlarmsToDisarm(s)
	if len(alarms) == 0 {
		return Action{}, false
	}
	return Action{Kind: KindDisarmCorrupt, MemberID: alarms[0].MemberID, Reason: ReasonReplacingMember,
		Message: "disarming the CORRUPT alarm " + alarmSubject(alarms[0].MemberID)}, true
}

// deleteOrphanPVC deletes the PVC of a member that is gone from Kubernetes and from etcd.
func deleteOrphanPVC(s *Scope) (Action, bool) {
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
			Message: fmt.Sprintf("adding %s as a learner once voter %s has been up for %s (etcd's strict reconfiguration check)", m.Name, v, s.strictReconfigSettle())}
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
	settle := s.strictReconfigSettle()
	for _, v := range voters {
		seen, ok := connectedSince(s, v)
		switch {
		case v.ID == s.Etcd.Leader || (ok && !seen.Add(settle).After(s.Now)):
			connected++ // the leader needs no connection to itself
		case ok:
			pending = append(pending, settling{s.DisplayName(v), seen.Add(settle)})
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

// connectedSince is when this operator first saw etcd list voter v started, the closest it can
// tell to when etcd's leader connected to it: the next pass after the connection, so it errs late,
// never early. (A Pod's container start is no better: the container of a staged member starts long
// before its etcd does.) false: v was never seen started.
func connectedSince(s *Scope, v etcdclient.Member) (time.Time, bool) {
	seen, ok := s.Etcd.StartedSeen[v.ID]
	return seen, ok
}
