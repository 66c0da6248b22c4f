package membership

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Quorum-loss recovery (docs/design/quorum-recovery.md): decide whether to recover, from which
// survivor, and walk the steps, one per pass, from status.quorumRecovery.

// Action kinds of quorum-loss recovery.
const (
	// KindStartRecovery records status.quorumRecovery (Action.Recovery).
	KindStartRecovery Kind = "StartRecovery"
	// KindStopForRecovery makes a member other than the survivor dormant: its Pod goes, its
	// EtcdMember and PVC stay until the survivor is alone.
	KindStopForRecovery Kind = "StopForRecovery"
	// KindForceNewCluster sets the survivor's Pod annotation force-new-cluster to
	// Action.ForceValue; the guard in the Pod restarts etcd once with --force-new-cluster.
	KindForceNewCluster Kind = "ForceNewCluster"
	// KindFinishRecovery clears status.quorumRecovery, the Pod annotation and
	// approve-recovery.
	KindFinishRecovery Kind = "FinishRecovery"
	// KindAbortRecovery clears status.quorumRecovery when its survivor is gone before the force.
	KindAbortRecovery Kind = "AbortRecovery"
	// KindRefuseApproval reports an approve-recovery value that does not match the candidate.
	KindRefuseApproval Kind = "RefuseApproval"
)

// Reasons of recovery.
const (
	// ReasonRecoveringQuorum is Progressing's reason while a recovery runs.
	ReasonRecoveringQuorum = "RecoveringQuorum"
	// RemovalReasonQuorumRecovery is the removal-reason of the members a recovery leaves behind.
	RemovalReasonQuorumRecovery = "QuorumRecovery"
)

// GuardedRecoveryDelay is how long quorum must have been lost before the cluster names the
// candidate a person may approve recovery from: long enough for members that are only down to
// come back and end the outage with nothing forced.
const GuardedRecoveryDelay = 10 * time.Minute

// recoveryPoll is how soon to look again while quorum is lost or a recovery step settles.
const recoveryPoll = time.Second

// ForceTimeout bounds a recovery from its start to the survivor serving alone. The guard acts
// within a second of the annotation and etcd starts within seconds; a guard that refuses the
// request (the member's log is not the one recorded) or cannot run leaves the recovery waiting,
// so it is ended and decided again from what is observed then.
const ForceTimeout = 3 * time.Minute

// Stranded is what the running members said about themselves while etcd's linearizable member
// list did not answer: each one's Status, its own (serializable) member list and its log tail.
type Stranded struct {
	// Survivors are the members that answered, by EtcdMember name.
	Survivors map[string]Survivor
}

// Survivor is one member that answered while quorum was lost.
type Survivor struct {
	// Status is its Status answer.
	Status etcdclient.Status
	// Members is its own view of the membership.
	Members []etcdclient.Member
	// Tail is the last entry of its log, from the data-dir guard; TailKnown is false when the
	// guard did not answer.
	Tail      quorum.LogPosition
	TailKnown bool
	// ClusterID is the cluster ID its WAL records, in hex; empty when unknown.
	ClusterID string
}

// RecoveryView is the recovery rule applied to one pass's observation.
type RecoveryView struct {
	// Mode is quorum.Recovery's verdict.
	Mode quorum.RecoveryMode
	// Candidate is the answering voter with the most up-to-date log; Found is false without one.
	Candidate Member
	Survivor  Survivor
	Found     bool
	// Approval is the approve-recovery value that approves recovery from Candidate.
	Approval string
	// Silent names the voters that do not answer, with what is known of them.
	Silent []string
}

// Recovery applies the recovery rule to s; false while etcd answers linearizably (quorum is
// there) or no member answered at all.
func Recovery(s *Scope) (RecoveryView, bool) {
	if s.ClusterID == "" || s.Etcd.Known || len(s.Stranded.Survivors) == 0 {
		return RecoveryView{}, false
	}
	voters, agreed := strandedVoters(s)
	var v RecoveryView
	states := make([]quorum.VoterState, 0, len(voters))
	var cands []quorum.Candidate
	byName := map[string]Member{}
	for _, e := range voters {
		m, hasMember := memberByEtcdID(s, e)
		sv, answered := s.Stranded.Survivors[m.Name]
		switch {
		case hasMember && answered && sv.TailKnown && sv.Status.ID == e.ID && sv.ClusterID == s.ClusterID:
			states = append(states, quorum.Answering)
			cands = append(cands, quorum.Candidate{Name: m.Name, Last: sv.Tail})
			byName[m.Name] = m
		case lostForGood(s, m, hasMember):
			states = append(states, quorum.Lost)
			v.Silent = append(v.Silent, silentName(m, e, hasMember)+" (data lost)")
		default:
			states = append(states, quorum.Down)
			v.Silent = append(v.Silent, silentName(m, e, hasMember)+" (down)")
		}
	}
	slices.Sort(v.Silent)
	v.Mode = quorum.Recovery(states)
	if v.Mode == quorum.RecoverAutomatically && !agreed {
		v.Mode = quorum.RecoverWithApproval // survivors disagree on the voters: let a person look
	}
	if c, ok := quorum.MostUpToDate(cands); ok {
		v.Candidate, v.Survivor, v.Found = byName[c.Name], s.Stranded.Survivors[c.Name], true
		v.Approval = ApprovalValue(s.ClusterID, c.Name, v.Survivor.Status.RaftAppliedIndex)
	}
	return v, true
}

// ApprovalValue is the approve-recovery value that approves recovery from member.
func ApprovalValue(clusterID, member string, appliedIndex uint64) string {
	return clusterID + "/" + member + "/" + strconv.FormatUint(appliedIndex, 10)
}

// strandedVoters are the voters of the survivors' member lists, and whether every survivor
// lists the same voters.
func strandedVoters(s *Scope) ([]etcdclient.Member, bool) {
	var out []etcdclient.Member
	agreed := true
	for _, name := range slices.Sorted(maps.Keys(s.Stranded.Survivors)) {
		var voters []etcdclient.Member
		for _, e := range s.Stranded.Survivors[name].Members {
			if !e.IsLearner {
				voters = append(voters, e)
			}
		}
		slices.SortFunc(voters, func(a, b etcdclient.Member) int { return cmp.Compare(a.ID, b.ID) })
		if out != nil && !slices.EqualFunc(out, voters, func(a, b etcdclient.Member) bool { return a.ID == b.ID }) {
			agreed = false
		}
		if len(voters) > len(out) {
			out = voters
		}
	}
	return out, agreed
}

// lostForGood reports a voter whose data provably no longer exists: the member controller found
// it lost, or neither its EtcdMember nor its PVC exists.
func lostForGood(s *Scope, m Member, hasMember bool) bool {
	if hasMember {
		return m.Unhealthy && m.HealthyReason == health.ReasonDataLost
	}
	return !slices.ContainsFunc(s.PVCs, func(p PVC) bool { return p.Member == m.Name && m.Name != "" })
}

// memberByEtcdID finds the EtcdMember of etcd member e; for a member without one, the returned
// Member carries only the name etcd's peer URL gives.
func memberByEtcdID(s *Scope, e etcdclient.Member) (Member, bool) {
	for _, m := range s.Members {
		if m.MemberID == e.ID {
			return m, true
		}
	}
	for _, m := range s.Members {
		if m.MemberID == 0 && (m.Name == e.Name || slices.ContainsFunc(e.PeerURLs, func(u string) bool { return NameFromPeerURL(u) == m.Name })) {
			return m, true
		}
	}
	name := e.Name
	if name == "" && len(e.PeerURLs) > 0 {
		name = NameFromPeerURL(e.PeerURLs[0])
	}
	return Member{Name: name}, false
}

func silentName(m Member, e etcdclient.Member, hasMember bool) string {
	if hasMember || m.Name != "" {
		return m.Name
	}
	return e.IDHex()
}

// recoverQuorum is the planner's first rule: carry on with a recorded recovery, or start one
// when the rule allows it (or a person approved it), or wait, saying why.
func recoverQuorum(s *Scope) (Action, bool) {
	if s.Recovery != nil {
		return continueRecovery(s), true
	}
	v, ok := Recovery(s)
	if !ok || !v.Found {
		return Action{}, false
	}
	switch v.Mode {
	case quorum.RecoverAutomatically:
		return startRecovery(s, v, etcdv1alpha2.QuorumRecoveryAutomatic), true
	case quorum.RecoverWithApproval:
		switch {
		case s.Approval == v.Approval:
			return startRecovery(s, v, etcdv1alpha2.QuorumRecoveryApproved), true
		case s.Approval != "":
			return Action{Kind: KindRefuseApproval, Member: v.Candidate.Name, Approval: s.Approval, Reason: ReasonWaitingForHealthyMembers,
				RequeueAfter: recoveryPoll, Message: approvalRefusal(s.Approval, v)}, true
		}
	}
	// Nothing to recover by itself: the other rules go on, and may bring the silent voters back
	// (orphan PVCs re-adopted, Pods recreated); Degraded says what it waits for (recoveryNote).
	return Action{}, false
}

func approvalRefusal(got string, v RecoveryView) string {
	return approvalRefusalText(got, v.Candidate.Name, v.Approval)
}

func startRecovery(s *Scope, v RecoveryView, mode string) Action {
	r := &etcdv1alpha2.QuorumRecovery{
		Member: v.Candidate.Name, MemberID: etcdclient.FormatID(v.Survivor.Status.ID),
		Term: clampInt64(v.Survivor.Tail.Term), Index: clampInt64(v.Survivor.Tail.Index),
		Mode: mode,
	}
	return Action{Kind: KindStartRecovery, Member: v.Candidate.Name, MemberID: v.Survivor.Status.ID, Recovery: r, Reason: ReasonRecoveringQuorum,
		Message: fmt.Sprintf("recovering quorum from %s (last log entry: term %d, index %d; %s)", r.Member, r.Term, r.Index, recoveryWhy(mode, v))}
}

func recoveryWhy(mode string, v RecoveryView) string {
	if mode == etcdv1alpha2.QuorumRecoveryApproved {
		return "approved; silent: " + joinNames(v.Silent)
	}
	return "automatic: no acknowledged write can be lost; silent: " + joinNames(v.Silent)
}

// continueRecovery walks the recorded recovery's steps.
func continueRecovery(s *Scope) Action {
	r := s.Recovery
	progress := func(kind Kind, member, msg string) Action {
		return Action{Kind: kind, Member: member, Reason: ReasonRecoveringQuorum, RequeueAfter: recoveryPoll,
			Message: fmt.Sprintf("recovering quorum from %s: %s", r.Member, msg)}
	}
	id, _ := etcdclient.ParseID(r.MemberID)
	cand, ok := s.memberNamed(r.Member)
	if forcedAlone(s, id) {
		for _, m := range sortedMembers(s) {
			if m.Name != r.Member && !m.Deleting {
				a := progress(KindRemove, m.Name, "removing "+m.Name+", which the recovered cluster no longer has")
				a.RemovalReason = RemovalReasonQuorumRecovery
				return a
			}
		}
		a := progress(KindFinishRecovery, r.Member, fmt.Sprintf("%s serves alone; growing back to %d members", r.Member, s.Target))
		a.RequeueAfter = 0
		return a
	}
	if !ok || cand.Deleting || (!cand.PodRunning && !cand.Dormant) {
		return Action{Kind: KindAbortRecovery, Member: r.Member, Reason: ReasonWaitingForHealthyMembers, RequeueAfter: recoveryPoll,
			Message: fmt.Sprintf("the recovery from %s ended before it was forced: the member's Pod no longer runs; deciding again from what is left", r.Member)}
	}
	for _, m := range sortedMembers(s) {
		if m.Name != r.Member && !m.Dormant {
			return progress(KindStopForRecovery, m.Name, "stopping "+m.Name+" so that no old quorum can form again")
		}
	}
	for _, m := range sortedMembers(s) {
		if m.Name != r.Member && m.PodRunning {
			return progress(KindWait, m.Name, "waiting for the Pod of "+m.Name+" to stop")
		}
	}
	if !r.StartedAt.IsZero() && s.Now.Sub(r.StartedAt.Time) > ForceTimeout {
		return Action{Kind: KindAbortRecovery, Member: r.Member, Reason: ReasonWaitingForHealthyMembers, RequeueAfter: recoveryPoll,
			Message: fmt.Sprintf("the recovery from %s did not bring it up alone within %s: its data-dir guard refused or could not act on the request (see the Pod's log); deciding again from what is left", r.Member, ForceTimeout)}
	}
	a := progress(KindForceNewCluster, r.Member, "restarting its etcd once with --force-new-cluster")
	a.MemberID, a.ForceValue = id, ForceValue(s.ClusterID, r)
	return a
}

// ForceValue is the force-new-cluster annotation value for r: the survivor's log as it was read.
func ForceValue(clusterID string, r *etcdv1alpha2.QuorumRecovery) string {
	return fmt.Sprintf("%s/%s/%d/%d", clusterID, r.MemberID, r.Term, r.Index)
}

// forcedAlone reports that etcd answers linearizably again with only the survivor as a member:
// the forced start happened.
func forcedAlone(s *Scope, id uint64) bool {
	return s.Etcd.Known && len(s.Etcd.Members) == 1 && s.Etcd.Members[0].ID == id
}

func (s *Scope) memberNamed(name string) (Member, bool) {
	i := slices.IndexFunc(s.Members, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Member{}, false
	}
	return s.Members[i], true
}

func sortedMembers(s *Scope) []Member {
	out := slices.Clone(s.Members)
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func clampInt64(v uint64) int64 {
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	out := names[0]
	for _, n := range names[1:] {
		out += ", " + n
	}
	return out
}

// recoveryNote says, for the Degraded condition of a cluster without quorum, what the operator
// waits for and what a person can do (docs/disaster-recovery.md).
func recoveryNote(s *Scope) string {
	if r := s.Recovery; r != nil {
		return fmt.Sprintf("; recovering from %s (%s), nothing is replaced until it serves alone", r.Member, r.Mode)
	}
	v, ok := Recovery(s)
	switch {
	case !ok:
		return "; no member answers: nothing can be replaced or recovered until one runs again"
	case !v.Found:
		return "; no survivor's log could be read (the data-dir guard on port 2382 did not answer): waiting"
	case v.Mode == quorum.RecoverAutomatically:
		return fmt.Sprintf("; recovering automatically from %s, whose log holds every acknowledged write", v.Candidate.Name)
	case s.Approval != "" && s.Approval != v.Approval:
		return "; " + approvalRefusal(s.Approval, v)
	case s.QuorumLostSince.IsZero() || s.Now.Sub(s.QuorumLostSince) < GuardedRecoveryDelay:
		return fmt.Sprintf("; waiting for %s to return; nothing is replaced without a quorum (if they cannot return, a recovery candidate is named after %s)",
			joinNames(v.Silent), GuardedRecoveryDelay)
	}
	return "; " + approvalNote(v.Silent, v.Candidate.Name, v.Approval)
}
