package membership

import (
	"slices"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/divergence"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// ReasonHashMismatch is the Degraded reason while the voters' keyspace hashes differ and no
// majority agrees on one (docs/design/healing.md, "Keyspace hash comparison"): a person must
// decide which member is wrong.
const ReasonHashMismatch = "HashMismatch"

// unattributedCleared reports whether a CORRUPT alarm with member ID 0 may be disarmed: the
// latest keyspace hash comparison ran while the alarm was active and found every voter's hash
// equal. The member it was about was replaced, or it never diverged at the compared revision; a
// later divergence raises the alarm again.
func unattributedCleared(s *Scope) bool {
	return s.Etcd.Hash.UnderAlarm && s.Etcd.Hash.Outcome == divergence.Consistent
}

// readyButForAlarm reports a member whose Pod runs and whose etcd answered Status, but which is
// not Ready only because a CORRUPT alarm is active: etcd's /readyz (the readiness probe) fails
// on every member while one is, so without this no voter would count healthy, the gate would
// refuse to remove the corrupt member, and the alarm would never be disarmed
// (docs/design/healing.md, "CORRUPT alarms"; found by TestPVCMemberKeyspaceDiverged).
func (s *Scope) readyButForAlarm(m Member, answered bool) bool {
	return answered && m.PodRunning && slices.ContainsFunc(s.Etcd.Alarms, func(a etcdclient.Alarm) bool { return a.Type == etcdclient.AlarmCorrupt })
}

// alarmSubject names the member a CORRUPT alarm is about in decisions and Events.
func alarmSubject(id uint64) string {
	if id == 0 {
		return "with member ID 0 (it names no member)"
	}
	return "of removed member " + etcdclient.FormatID(id)
}

// hashDegraded is the Degraded reason and message the keyspace hash comparison calls for, given
// the unhealthy members' names: a named member joins MembersUnhealthy with the comparison's
// finding; a difference without a majority is HashMismatch. Both are empty when the comparison
// has nothing to report about members etcd still lists.
func hashDegraded(s *Scope, unhealthy []string) (reason, msg string) {
	r := s.Etcd.Hash
	listed := func(id uint64) bool {
		return slices.ContainsFunc(s.Etcd.Members, func(e etcdclient.Member) bool { return e.ID == id })
	}
	r.Named = slices.DeleteFunc(slices.Clone(r.Named), func(id uint64) bool { return !listed(id) })
	r.Differing = slices.DeleteFunc(slices.Clone(r.Differing), func(id uint64) bool { return !listed(id) })
	name := func(id uint64) string {
		i := slices.IndexFunc(s.Etcd.Members, func(e etcdclient.Member) bool { return e.ID == id })
		return s.DisplayName(s.Etcd.Members[i])
	}
	switch {
	case r.Outcome == divergence.Diverged && len(r.Named) > 0:
		return ReasonMembersUnhealthy, "not healthy: " + strings.Join(unhealthy, ", ") + "; " + r.Message(name)
	case r.Outcome == divergence.Undecided && len(r.Differing) > 1:
		msg := r.Message(name)
		if len(unhealthy) > 0 {
			msg = "not healthy: " + strings.Join(unhealthy, ", ") + "; " + msg
		}
		return ReasonHashMismatch, msg
	}
	return "", ""
}
