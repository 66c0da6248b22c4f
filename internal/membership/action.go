package membership

import (
	"time"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Kind is what an Action does.
type Kind string

// Action kinds. Each is one step the controller can finish in one pass; each is idempotent, so a
// crash right after any of its writes is finished by a later pass (see the package doc).
const (
	// KindNone: nothing to do; the cluster is converged, paused, or waiting on a watch.
	KindNone Kind = "None"
	// KindWait: waiting for external state (a Pod to start, a learner to catch up); requeue
	// after Action.RequeueAfter.
	KindWait Kind = "Wait"
	// KindBlocked: the quorum gate refused the action the planner wanted (Action.Gate).
	KindBlocked Kind = "Blocked"

	// KindCreateSeed creates the seed EtcdMember (B1) after an uncached list.
	KindCreateSeed Kind = "CreateSeed"
	// KindInitSeed pre-stamps the seed's status.isVoter and patches its initialCluster (B2).
	KindInitSeed Kind = "InitSeed"
	// KindLatchClusterID writes status.clusterID (B4).
	KindLatchClusterID Kind = "LatchClusterID"

	// KindJoin adds a pending or staged member as a learner (unless Action.InEtcd) and patches
	// its initialCluster when it has none yet.
	KindJoin Kind = "Join"
	// KindStage gives a pending member its initialCluster before it is added (Action.
	// InitialCluster): its Pod is built and waits, under the data-dir guard, for the add.
	KindStage Kind = "Stage"
	// KindPromote promotes a started learner.
	KindPromote Kind = "Promote"
	// KindRemoveOrphan removes a learner no EtcdMember explains.
	KindRemoveOrphan Kind = "RemoveOrphan"
	// KindCreateMember creates a pending EtcdMember after an uncached list.
	KindCreateMember Kind = "CreateMember"
	// KindWake wakes the dormant member with one patch (dormant false, template = observed).
	KindWake Kind = "Wake"
	// KindMoveLeader moves leadership away from the scale-down victim.
	KindMoveLeader Kind = "MoveLeader"
	// KindRemove annotates the victim with removal-reason (unless it has one), removes it from
	// etcd (when Action.InEtcd) and deletes its EtcdMember.
	KindRemove Kind = "Remove"
	// KindDeletePVC deletes the PVC of a member that is gone from Kubernetes and etcd.
	KindDeletePVC Kind = "DeletePVC"
	// KindSetDormant makes the last member dormant (pause).
	KindSetDormant Kind = "SetDormant"
	// KindBackoff records status.replacementBackoff (Action.Backoff) for a member that never
	// started, before it is replaced.
	KindBackoff Kind = "Backoff"
	// KindDisarmCorrupt disarms the CORRUPT alarm of a member (Action.MemberID) that is no
	// longer in etcd.
	KindDisarmCorrupt Kind = "DisarmCorrupt"
	// KindReadopt re-creates the EtcdMember of an orphan data PVC under its old name (unless
	// Action.Readopt.Create is false), prefills its member ID when known, and rewrites the
	// PVC's member-uid to the new member (docs/design/healing.md).
	KindReadopt Kind = "Readopt"
	// KindAuthorise writes the latched template and its hash (Action.Hash) onto a member in
	// one patch: the member controller then restarts the member's Pod with it when the Pod
	// runs another hash (Action.Disrupts), or has nothing to do when it already runs it
	// (docs/design/rolling-updates.md).
	KindAuthorise Kind = "Authorise"
	// KindEnableAuth creates root with the Secret's password and turns etcd auth on
	// (docs/auth.md); KindLatchAuth records auth found on already; KindChangePassword sets
	// root's password to the Secret's through the session of the previous one.
	KindEnableAuth     Kind = "EnableAuth"
	KindLatchAuth      Kind = "LatchAuth"
	KindChangePassword Kind = "ChangePassword"
)

// Kinds lists every kind of action the planner returns, for the controller's test that each
// has an executor.
func Kinds() []Kind {
	return []Kind{KindNone, KindWait, KindBlocked, KindCreateSeed, KindInitSeed, KindLatchClusterID, KindJoin, KindStage, KindPromote,
		KindRemoveOrphan, KindCreateMember, KindWake, KindMoveLeader, KindRemove, KindDeletePVC, KindSetDormant, KindBackoff,
		KindDisarmCorrupt, KindReadopt, KindAuthorise, KindEnableAuth, KindLatchAuth, KindChangePassword,
		KindStartRecovery, KindStopForRecovery, KindForceNewCluster, KindFinishRecovery, KindAbortRecovery, KindRefuseApproval}
}

// Progressing reasons (docs/design/conditions-and-events.md) the planner chooses.
const (
	ReasonWaitingForSeed           = "WaitingForSeed"
	ReasonBootstrapping            = "Bootstrapping"
	ReasonScalingUp                = "ScalingUp"
	ReasonPromotingLearner         = "PromotingLearner"
	ReasonScalingDown              = "ScalingDown"
	ReasonResuming                 = "Resuming"
	ReasonReplacingMember          = "ReplacingMember"
	ReasonWaitingForHealthyMembers = "WaitingForHealthyMembers"
	ReasonReconciled               = "Reconciled"
	ReasonPaused                   = "Paused"
)

// Action is the planner's answer: one step, or a reason to wait.
type Action struct {
	// Kind is what to do.
	Kind Kind
	// Member is the EtcdMember acted on (empty for a create, an orphan or a PVC).
	Member string
	// MemberID is the etcd member acted on: the learner to promote, the member to remove, the
	// voter leadership moves to.
	MemberID uint64
	// PeerURL is the peer URL to add (KindJoin).
	PeerURL string
	// InitialCluster is the --initial-cluster to patch (KindInitSeed, KindJoin).
	InitialCluster string
	// InEtcd says whether the member is in etcd already: a Join then skips the add, a Remove
	// skips nothing but the MemberRemove.
	InEtcd bool
	// ClusterID is the cluster ID to latch (KindLatchClusterID).
	ClusterID string
	// RemovalReason is the removal-reason to record (KindRemove).
	RemovalReason string
	// PVC is the PVC to delete (KindDeletePVC).
	PVC string
	// Gate is the quorum gate's decision for a membership or leadership action; nil when the
	// action needs none.
	Gate *quorum.Decision
	// Refused is, for a Blocked action, the kind of the action the gate refused.
	Refused Kind
	// Backoff is the replacement back-off to record (KindBackoff).
	Backoff Backoff
	// Reason and Message are the Progressing condition the action implies.
	Reason, Message string
	// RequeueAfter asks for a pass after this long even if no watch fires; 0 leaves it to
	// watches and the resync.
	RequeueAfter time.Duration
	// Readopt details a KindReadopt; PVC names the PVC and Member the member it comes back as.
	Readopt Readopt
	// Hash is the template hash to authorise (KindAuthorise).
	Hash string
	// Disrupts is true for a KindAuthorise that makes the member controller restart the
	// member's Pod: a rolling-update step, quorum-gated.
	Disrupts bool
	// VersionRejection is, for a KindWait, the version rules' refusal that holds the step (a
	// wake whose data the latched version may not follow): the cluster then reports
	// Progressing=False/VersionChangeRejected, as for a refused spec.
	VersionRejection string
	// Recovery is the quorum recovery to record (KindStartRecovery).
	Recovery *etcdv1alpha2.QuorumRecovery
	// ForceValue is the force-new-cluster annotation to set (KindForceNewCluster).
	ForceValue string
	// Approval is the approve-recovery value refused (KindRefuseApproval).
	Approval string
}

// RemovalReasonScaleDown is the removal-reason of a scale-down victim.
const RemovalReasonScaleDown = "ScaleDown"

// A replaced member's removal-reason is its Healthy reason (DataLost, DataCorrupt,
// RemovedFromCluster): the annotation then says why the member went.

// Mutates reports whether the action writes to etcd or Kubernetes.
func (a Action) Mutates() bool {
	switch a.Kind {
	case KindNone, KindWait, KindBlocked:
		return false
	}
	return true
}

// gate returns a if the gate allows it, and otherwise a Blocked action carrying the decision.
func gate(a Action, d quorum.Decision) Action {
	a.Gate = &d
	if d.Allowed {
		return a
	}
	return Action{
		Kind:         KindBlocked,
		Refused:      a.Kind,
		Member:       a.Member,
		MemberID:     a.MemberID,
		Gate:         &d,
		Reason:       ReasonWaitingForHealthyMembers,
		Message:      d.Message,
		RequeueAfter: MembershipPoll,
	}
}
