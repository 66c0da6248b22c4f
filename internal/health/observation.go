package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Observation is everything Classify looks at for one member, as plain values. The caller (the
// EtcdMember controller) fills it from the objects and etcd view of one pass; nothing here is
// read from a previous pass's status except FirstFailure and PreviousTermination, the two
// memories a crash loop needs (see their comments).
type Observation struct {
	// Now is the current time; every grace is measured against it.
	Now time.Time
	// Graces are the operator's grace flags; zero fields take the defaults
	// (docs/design/timings.md).
	Graces Graces
	// Minor is the etcd minor the member runs ("3.6", or a full version), which selects the
	// termination-message pattern table.
	Minor string
	// ClusterID is the cluster's etcd ID in hex (EtcdCluster status.clusterID), empty until
	// latched. It tells a member running a foreign cluster ID from its healthy peers.
	ClusterID string
	// Memory says the member's data dir is an emptyDir with medium Memory (tmpfs): its data
	// lives and dies with the Pod.
	Memory bool
	// DataExpected says the member ran with its data dir before (desired.DataExpected: it has
	// an etcd member ID and reported a version, or is a voter): a start that fails on that data
	// dir fails on data the member wrote.
	DataExpected bool
	// Dormant says the member is paused (spec.dormant): it has no Pod by design.
	Dormant bool
	// RecordedPodUID is status.podUID: the UID of the last Pod the member ran in, empty if it
	// never had one. For a Memory member, a Pod that is missing or has another UID means the
	// data is gone.
	RecordedPodUID string
	// Pod is the member's own Pod, nil when there is none.
	Pod *Pod
	// PVNode is the Node that the bound PersistentVolume of the member's PVC is pinned to by
	// node affinity (local volumes), nil when the PV is not pinned or not known.
	PVNode *Node
	// Etcd is what etcd says about the member.
	Etcd EtcdView
	// FirstFailure is when the member was first seen failing (not Ready while it should be)
	// and its container's restart count then; zero when it is not failing. The caller keeps
	// it (the member's Ready condition's lastTransitionTime is the time; the restart count
	// needs a record of its own); losing it only delays a classification.
	FirstFailure Failure
}

// Failure marks the start of a failure.
type Failure struct {
	// At is when the failure was first seen.
	At time.Time
	// RestartCount is the container's restart count at that moment, nil when it was not
	// recorded. Without it only memberFailureGrace can make a crash loop: counting restarts
	// from zero would count restarts from long before this failure.
	RestartCount *int32
}

// Pod is what Classify needs from the member's Pod.
type Pod struct {
	// UID is metadata.uid.
	UID string
	// CreatedAt is metadata.creationTimestamp: the start of the start grace and of Pending.
	CreatedAt time.Time
	// Phase is status.phase.
	Phase corev1.PodPhase
	// Reason is status.reason ("Evicted", "NodeLost", "Shutdown"...).
	Reason string
	// Ready is the Pod's Ready condition.
	Ready bool
	// DeletionTimestamp is metadata.deletionTimestamp, zero when the Pod is not being deleted.
	// The API server sets it to the end of the Pod's termination grace period.
	DeletionTimestamp time.Time
	// Unschedulable says the PodScheduled condition is False (reason Unschedulable), and
	// UnschedulableSince is that condition's lastTransitionTime.
	Unschedulable      bool
	UnschedulableSince time.Time
	// SchedulingMessage is the PodScheduled condition's message, quoted in the Healthy message.
	SchedulingMessage string
	// TemplateCurrent says the Pod runs the member's authorised template (Updated=True).
	TemplateCurrent bool
	// WasReadyWithTemplate says the member has been Ready in this Pod while running its
	// current template: only then, or with RanTemplate, is a failure a crash loop rather than a
	// start failure.
	WasReadyWithTemplate bool
	// RanTemplate says the member was Ready in an earlier Pod with the template this Pod runs
	// (status.readyTemplateHash): the Pod was recreated, not rolled to a new template, so a
	// failure to start is not the template's fault.
	RanTemplate bool
	// AwaitingMembership says the Pod's guard holds etcd until the member is added to etcd (a
	// staged join, docs/design/membership-flows.md), and the member has not been added yet: not
	// being Ready is then the plan, not a start failure.
	AwaitingMembership bool
	// Node is the Node the Pod is bound to, nil while it is not scheduled or when unknown.
	Node *Node
	// Container is the etcd container's status.
	Container Container
}

// Container is what Classify needs from the etcd container's status.
type Container struct {
	// Running says state.running is set.
	Running bool
	// WaitingReason is state.waiting.reason ("CrashLoopBackOff", "ImagePullBackOff"...).
	WaitingReason string
	// RestartCount is restartCount.
	RestartCount int32
	// LastTermination is the most recent termination: state.terminated when the container is
	// terminated now, else lastState.terminated; nil when it never terminated.
	LastTermination *Termination
	// PreviousTermination is the termination before LastTermination. The API keeps only one
	// past termination, so the caller remembers it (keyed by Pod UID and restart count); nil
	// when unknown. A classified fatal exit needs two consecutive identical terminations.
	PreviousTermination *Termination
}

// Termination is one container termination.
type Termination struct {
	// ExitCode is the container's exit code.
	ExitCode int32
	// Reason is the runtime's reason: "OOMKilled", "Error", "Completed"...
	Reason string
	// Message is the termination message: with FallbackToLogsOnError, the tail of etcd's log.
	Message string
}

// Node is what Classify needs from a Node.
type Node struct {
	// Name is the Node's name.
	Name string
	// Gone says the Node object does not exist.
	Gone bool
	// Ready is the Node's Ready condition being True.
	Ready bool
	// NotReadySince is the Ready condition's lastTransitionTime while it is not True.
	NotReadySince time.Time
	// Unreachable says the Node carries the node.kubernetes.io/unreachable taint.
	Unreachable bool
}

// EtcdView is what etcd says about the member, as seen by the operator this pass.
type EtcdView struct {
	// MemberListKnown says MemberList answered this pass. Without it, nothing below InMemberList
	// is trusted.
	MemberListKnown bool
	// Added says the member was added to etcd (spec.initialCluster is set).
	Added bool
	// InMemberList says etcd's member list holds the member's ID (or, before the ID is known,
	// its peer URL).
	InMemberList bool
	// CorruptAlarm says AlarmList has a CORRUPT alarm naming this member's ID.
	CorruptAlarm bool
	// Unreachable says the member's own endpoint timed out on Status this pass.
	Unreachable bool
	// Lagging says the member's applied index is behind the leader's.
	Lagging bool
	// HashDiffersAt is the revision at which the EtcdCluster controller's keyspace hash
	// comparison found this member's hash different from the majority's; 0 when it did not.
	HashDiffersAt int64
}

// Graces are the operator's timing flags that Classify uses (docs/design/timings.md, "Graces").
type Graces struct {
	// MemberFailure is how long a member that was Ready may stay not Ready before it is a
	// crash loop (memberFailureGrace).
	MemberFailure time.Duration
	// MemberStart is how long a Pod with a new template may take to become Ready
	// (memberStartGrace).
	MemberStart time.Duration
	// Pending is how long a Pod may stay unschedulable before the member is Unschedulable.
	Pending time.Duration
	// NodeLost is how long the Node a member's volume is pinned to may be NotReady.
	NodeLost time.Duration
	// Terminating is how long past its deletion grace a Pod may stay Terminating on a NotReady
	// Node.
	Terminating time.Duration
}

// Default graces (docs/design/timings.md, "Graces").
const (
	DefaultMemberFailureGrace = 3 * time.Minute
	DefaultMemberStartGrace   = 5 * time.Minute
	DefaultPendingGrace       = 5 * time.Minute
	DefaultNodeLostGrace      = 5 * time.Minute
	DefaultTerminatingGrace   = 5 * time.Minute

	// CrashLoopRestarts restarts within CrashLoopWindow make a crash loop before
	// memberFailureGrace has passed (docs/design/healing.md, "Classification").
	CrashLoopRestarts = 3
	// CrashLoopWindow is the window CrashLoopRestarts are counted in.
	CrashLoopWindow = 10 * time.Minute
	// OrphanMemberGrace is how long an etcd member that no EtcdMember or PVC explains may exist
	// before it is removed (orphanMemberGrace).
	OrphanMemberGrace = time.Minute
)

// DefaultGraces returns the default graces (docs/design/timings.md, "Graces").
func DefaultGraces() Graces {
	return Graces{
		MemberFailure: DefaultMemberFailureGrace,
		MemberStart:   DefaultMemberStartGrace,
		Pending:       DefaultPendingGrace,
		NodeLost:      DefaultNodeLostGrace,
		Terminating:   DefaultTerminatingGrace,
	}
}

// withDefaults fills zero (or negative) graces with the defaults.
func (g Graces) withDefaults() Graces {
	d := DefaultGraces()
	pick := func(v, def time.Duration) time.Duration {
		if v <= 0 {
			return def
		}
		return v
	}
	return Graces{
		MemberFailure: pick(g.MemberFailure, d.MemberFailure),
		MemberStart:   pick(g.MemberStart, d.MemberStart),
		Pending:       pick(g.Pending, d.Pending),
		NodeLost:      pick(g.NodeLost, d.NodeLost),
		Terminating:   pick(g.Terminating, d.Terminating),
	}
}
