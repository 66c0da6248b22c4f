package membership

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Reasons of the defrag coordination and of the NOSPACE alarm (docs/design/conditions-and-events.md,
// docs/defrag.md).
const (
	// ReasonAlarmActive is Degraded's reason while etcd's NOSPACE alarm refuses writes.
	ReasonAlarmActive = "AlarmActive"
	// ReasonWaitingForDefrag is Progressing's reason while a step waits for a Running EtcdDefrag.
	ReasonWaitingForDefrag = "WaitingForDefrag"
)

// holdForDefrag holds every step that writes while an EtcdDefrag of the cluster is Running
// (docs/defrag.md, "Coordination with the cluster controller"): the run takes members away one
// at a time under its own quorum gate, which counts on no other disruption and no membership
// change happening beside it. The run is bounded (five minutes per member) and the watch on
// EtcdDefrags starts the held step as soon as it ends.
func holdForDefrag(s *Scope, a Action) Action {
	if len(s.DefragRunning) == 0 || !a.Mutates() || a.Reason == ReasonRecoveringQuorum {
		// A cluster without quorum cannot be defragmented either: its run waits for its
		// deadline, and the recovery must not (docs/design/quorum-recovery.md).
		return a
	}
	return Action{Kind: KindWait, Member: a.Member, Reason: ReasonWaitingForDefrag, RequeueAfter: MembershipPoll,
		Message: fmt.Sprintf("EtcdDefrag %s is running; then: %s", strings.Join(s.DefragRunning, ", "), a.Message)}
}

// noSpaceMessage describes an active NOSPACE alarm and what to do about it, or is empty when
// none is active.
func noSpaceMessage(s *Scope) string {
	var raisedBy []string
	for _, a := range s.Etcd.Alarms {
		if a.Type != etcdclient.AlarmNoSpace {
			continue
		}
		name := etcdclient.FormatID(a.MemberID)
		for _, e := range s.Etcd.Members {
			if e.ID == a.MemberID && e.Name != "" {
				name = e.Name
			}
		}
		raisedBy = append(raisedBy, name)
	}
	if len(raisedBy) == 0 {
		return ""
	}
	slices.Sort(raisedBy)
	return fmt.Sprintf("etcd's NOSPACE alarm is active (raised by %s): the database reached its backend quota and etcd refuses writes; "+
		"delete or compact what is not needed, then create an EtcdDefrag, which disarms the alarm once every member is below the quota (docs/defrag.md), "+
		"or raise spec.options.quotaBackendBytes", strings.Join(slices.Compact(raisedBy), ", "))
}
