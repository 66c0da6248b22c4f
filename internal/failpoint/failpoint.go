package failpoint

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// EnvVar names the environment variable read at start-up: its value is the step at which the
// process exits.
const EnvVar = "ETCD_OPERATOR_FAILPOINT"

// ExitCode is the process exit code of a triggered failpoint, distinct from a crash (2) or an
// error (1) so that a test driving the binary can tell them apart.
const ExitCode = 77

// Step names. Each is hit right after the write or etcd call it names has succeeded.
const (
	// SpecAdopted follows the status patch that adopts a new spec into status.observed
	// (docs/design/membership-flows.md, "Latched target"): the first target, a change on a
	// converged cluster, or a retry after the deadline.
	SpecAdopted = "spec-adopted"
	// SeedCreated follows the create of the seed EtcdMember (bootstrap state B1,
	// docs/design/membership-flows.md).
	SeedCreated = "seed-created"
	// SeedVoterStamped follows the status patch pre-stamping the seed as a voter (B2).
	SeedVoterStamped = "seed-voter-stamped"
	// SeedInitialClusterPatched follows the patch of the seed's spec.initialCluster (B2).
	SeedInitialClusterPatched = "seed-initial-cluster-patched"
	// ClusterIDLatched follows the status patch that latches status.clusterID (B4).
	ClusterIDLatched = "cluster-id-latched"
	// MemberCreated follows the create of a new (pending) EtcdMember (scale-up).
	MemberCreated = "member-created"
	// MemberStaged follows the patch that gives a pending member its initial cluster before its
	// add (a staged join).
	MemberStaged = "member-staged"
	// LearnerAdded follows MemberAddAsLearner (scale-up).
	LearnerAdded = "learner-added"
	// LearnerInitialClusterPatched follows the patch of a learner's spec.initialCluster.
	LearnerInitialClusterPatched = "learner-initial-cluster-patched"
	// LearnerPromoted follows MemberPromote (scale-up).
	LearnerPromoted = "learner-promoted"
	// MemberStatusPatched follows a patch of an EtcdMember's memberID, isVoter or version.
	MemberStatusPatched = "member-status-patched"
	// OrphanRemoved follows MemberRemove of a learner no EtcdMember explains.
	OrphanRemoved = "orphan-removed"
	// LeaderMoved follows MoveLeader away from a scale-down victim.
	LeaderMoved = "leader-moved"
	// RemovalReasonSet follows the annotation of a victim with removal-reason.
	RemovalReasonSet = "removal-reason-set"
	// MemberRemoved follows MemberRemove of a victim.
	MemberRemoved = "member-removed"
	// MemberDeleted follows the delete of a removed member's EtcdMember.
	MemberDeleted = "member-deleted"
	// PVCDeleted follows the delete of a removed member's PVC.
	PVCDeleted = "pvc-deleted"
	// DormantSet follows the patch that makes the last member dormant (pause).
	DormantSet = "dormant-set"
	// MemberWoken follows the patch that wakes the dormant member (resume).
	MemberWoken = "member-woken"
	// AlarmDisarmed follows AlarmDisarm of the CORRUPT alarm of a replaced member.
	AlarmDisarmed = "alarm-disarmed"
	// MemberReadopted follows the create of an EtcdMember for an orphan PVC, under the
	// PVC's member name (re-adoption).
	MemberReadopted = "member-readopted"
	// ReadoptedMemberIDSet follows the status patch prefilling a re-adopted member's memberID.
	ReadoptedMemberIDSet = "readopted-member-id-set"
	// PVCReadopted follows the rewrite of a re-adopted PVC's member-uid to its new member.
	PVCReadopted = "pvc-readopted"
	// TemplateAuthorised follows the patch that writes the latched template and its hash onto
	// a member (a rolling-update step).
	TemplateAuthorised = "template-authorised"
)

// Names lists every step, in the order the flows reach them.
var Names = []string{
	SpecAdopted, SeedCreated, SeedVoterStamped, SeedInitialClusterPatched, ClusterIDLatched,
	MemberCreated, LearnerAdded, LearnerInitialClusterPatched, LearnerPromoted, MemberStatusPatched,
	OrphanRemoved, LeaderMoved, RemovalReasonSet, MemberRemoved, MemberDeleted, PVCDeleted,
	DormantSet, MemberWoken, AlarmDisarmed, MemberReadopted, ReadoptedMemberIDSet, PVCReadopted,
	TemplateAuthorised,
}

// Action runs when an armed step is hit.
type Action func(step string)

type armed struct {
	step   string
	action Action
}

var current atomic.Pointer[armed]

var envOnce sync.Once

// exit is the production action: it ends the process at once, without running deferred
// functions, which is what a crash looks like to the rest of the system.
func exit(step string) {
	_, _ = fmt.Fprintf(os.Stderr, "failpoint %q reached: exiting\n", step)
	os.Exit(ExitCode) //nolint:forbidigo // the failpoint exists to end the process right after a step; it is never armed in production
}

// Arm makes the process exit right after step; an empty step disarms. It is how the operator's
// flag arms a failpoint.
func Arm(step string) {
	SetAction(step, exit)
}

// SetAction makes Inject(step) call action instead of exiting; an empty step or a nil action
// disarms. Tests use it to panic in-process and restart the reconciler.
func SetAction(step string, action Action) {
	envOnce.Do(func() {}) // an explicit arming wins over the environment
	if step == "" || action == nil {
		current.Store(nil)
		return
	}
	current.Store(&armed{step: step, action: action})
}

// Disarm clears any armed step.
func Disarm() { SetAction("", nil) }

// Inject is called right after the step named step has succeeded. It does nothing unless that
// step is armed.
func Inject(step string) {
	envOnce.Do(func() {
		if s := os.Getenv(EnvVar); s != "" {
			current.Store(&armed{step: s, action: exit})
		}
	})
	if a := current.Load(); a != nil && a.step == step {
		a.action(step)
	}
}

// Known reports whether step is one of Names.
func Known(step string) bool {
	for _, n := range Names {
		if n == step {
			return true
		}
	}
	return false
}
