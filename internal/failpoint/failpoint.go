package failpoint

import (
	"context"
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

// Set is one arming: at most one step, and what happens when it is hit. The process has one,
// which Arm, SetAction and Disarm change and EnvVar arms at start-up. A context may carry another
// (NewContext): Inject then consults that one only, so tests that crash several reconcilers at
// once, each in its own namespace, arm each its own without crashing the others. The zero value
// is disarmed.
type Set struct {
	current atomic.Pointer[armed]
}

// SetAction makes Inject(ctx, step) call action, for contexts that carry s; an empty step or a
// nil action disarms.
func (s *Set) SetAction(step string, action Action) {
	if step == "" || action == nil {
		s.current.Store(nil)
		return
	}
	s.current.Store(&armed{step: step, action: action})
}

// Disarm clears the step armed in s.
func (s *Set) Disarm() { s.SetAction("", nil) }

func (s *Set) inject(step string) {
	if a := s.current.Load(); a != nil && a.step == step {
		a.action(step)
	}
}

// process is the process-wide arming.
var process Set

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

// SetAction makes Inject(ctx, step) call action instead of exiting, for contexts that carry no
// Set of their own; an empty step or a nil action disarms.
func SetAction(step string, action Action) {
	envOnce.Do(func() {}) // an explicit arming wins over the environment
	process.SetAction(step, action)
}

// Disarm clears the process-wide armed step.
func Disarm() { SetAction("", nil) }

type contextKey struct{}

// NewContext returns a copy of ctx whose Inject calls consult s instead of the process-wide
// arming.
func NewContext(ctx context.Context, s *Set) context.Context {
	return context.WithValue(ctx, contextKey{}, s)
}

// Inject is called right after the step named step has succeeded, with the context of the pass
// that took it. It does nothing unless that step is armed: in the Set ctx carries, or else
// process-wide.
func Inject(ctx context.Context, step string) {
	if s, ok := ctx.Value(contextKey{}).(*Set); ok && s != nil {
		s.inject(step)
		return
	}
	envOnce.Do(func() {
		if s := os.Getenv(EnvVar); s != "" {
			process.current.Store(&armed{step: s, action: exit})
		}
	})
	process.inject(step)
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
