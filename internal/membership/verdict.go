package membership

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/health"
)

// ClassifyFromEtcd adds the verdicts only etcd's view can give (docs/design/healing.md) to members the
// member controller reports healthy: a member someone else removed from etcd
// (RemovedFromCluster) and a member a CORRUPT alarm or the keyspace hash comparison names
// (DataCorrupt). The member controller
// does not read etcd on every pass, and asking it to would cost every idle resync a MemberList
// per member; the cluster controller reads the member list and the alarms anyway. The verdict
// is carried like the member's own Healthy=False, so status (brokenMembers, Degraded) and
// replacement treat both alike. It changes nothing while etcd did not answer or before the
// cluster ID is latched.
func (s *Scope) ClassifyFromEtcd() {
	if !s.Etcd.Known || s.ClusterID == "" {
		return
	}
	for i := range s.Members {
		m := &s.Members[i]
		if (m.Unhealthy && slices.Contains(replaceable, m.HealthyReason)) || m.RemovalReason != "" || !m.Running() || m.Pending || s.staged(*m) {
			continue
		}
		e, inEtcd := s.etcdMemberByIdentity(*m)
		switch {
		case !inEtcd:
			m.Unhealthy, m.HealthyReason = true, health.ReasonRemovedFromCluster
			m.HealthyMessage = "etcd's member list no longer has this member: it was removed from etcd outside the operator"
		case s.hasCorruptAlarm(e.ID):
			m.Unhealthy, m.HealthyReason = true, health.ReasonDataCorrupt
			m.HealthyMessage = fmt.Sprintf("etcd raised a CORRUPT alarm for member %s: its data diverged from its peers'", e.IDHex())
		case s.Etcd.Hash.Names(e.ID):
			m.Unhealthy, m.HealthyReason = true, health.ReasonDataCorrupt
			m.HealthyMessage = health.HashDivergedMessage(s.Etcd.Hash.Revision)
		}
	}
}

// etcdMemberByIdentity finds m in etcd by the ID it recorded, or, before it recorded one, by
// peer URL or name. Once an ID is recorded only the ID counts: a peer URL would also match a
// member someone added again under the removed member's name, with a new ID and no data.
func (s *Scope) etcdMemberByIdentity(m Member) (etcdclient.Member, bool) {
	if m.MemberID == 0 {
		return s.EtcdMemberOf(m)
	}
	for _, e := range s.Etcd.Members {
		if e.ID == m.MemberID {
			return e, true
		}
	}
	return etcdclient.Member{}, false
}

// corruptAlarmsToDisarm are CORRUPT alarms naming members that are no longer in etcd: the
// member was replaced, and the alarm (which makes etcd refuse writes cluster-wide) has nothing
// left to protect. An alarm with member ID 0 names nobody (etcd 3.5.7 and later raise it so):
// it goes only once a comparison made under it found every voter's keyspace hash equal
// (unattributedCleared, docs/design/healing.md, "Keyspace hash comparison").
func corruptAlarmsToDisarm(s *Scope) []etcdclient.Alarm {
	var out []etcdclient.Alarm
	for _, a := range s.Etcd.Alarms {
		if a.Type != etcdclient.AlarmCorrupt || (a.MemberID == 0 && !unattributedCleared(s)) {
			continue
		}
		if slices.ContainsFunc(s.Etcd.Members, func(e etcdclient.Member) bool { return e.ID == a.MemberID }) {
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b etcdclient.Alarm) int { return cmp.Compare(a.MemberID, b.MemberID) })
	return out
}

// LagThreshold is how many entries a member's applied index may trail the leader's before it
// counts as lagging: the same bound a rolled member must be within to count as caught up.
const LagThreshold = RollMaxLag

// EndpointView is what one pass saw of a running member's own endpoint (docs/design/healing.md): the
// EtcdMember controller turns Unreachable into Healthy=Unknown/Unreachable and Lagging into a
// note. Neither leads to anything destructive.
type EndpointView struct {
	Unreachable bool
	Lagging     bool
	// HashDiffersAt is the revision at which the keyspace hash comparison found the member's
	// hash different from the majority's; 0 when it did not.
	HashDiffersAt int64
}

// EndpointViews are the views of the running members whose Pods are Ready and whose etcd member
// has started, by member name. Only while etcd's member list answered: with no member
// answering, the cluster as a whole is ClusterUnreachable and no single member is to blame.
func EndpointViews(s *Scope) map[string]EndpointView {
	out := map[string]EndpointView{}
	if !s.Etcd.Known {
		return out
	}
	leader, leaderAnswered := s.Etcd.Statuses[s.Etcd.Leader]
	for _, m := range s.Running() {
		e, inEtcd := s.etcdMemberByIdentity(m)
		if !m.PodReady || !inEtcd || !e.Started() {
			continue
		}
		st, answered := s.Etcd.Statuses[e.ID]
		switch {
		case !answered:
			out[m.Name] = EndpointView{Unreachable: true}
		case leaderAnswered && leader.RaftAppliedIndex > st.RaftAppliedIndex+LagThreshold:
			out[m.Name] = EndpointView{Lagging: true}
		}
		if s.Etcd.Hash.Names(e.ID) {
			v := out[m.Name]
			v.HashDiffersAt = s.Etcd.Hash.Revision
			out[m.Name] = v
		}
	}
	return out
}
