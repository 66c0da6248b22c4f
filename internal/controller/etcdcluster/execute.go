package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// executor carries out one pass's plan. Each kind of action has its executor in a file named
// after it (execute_<kind>.go); each is small, makes the writes its action names, records its
// Event and metric, and hits its failpoints. None decides anything the plan did not.
type executor struct {
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	memory    *memory
	tlsCache  *tlsCache
	views     *etcdview.Board
	obs       *observation
	plan      membership.Plan
	// effects are the status fields set by the actions that ran (status.go renders them).
	effects effects
	// written holds the EtcdMembers and PVCs as this pass's own writes returned them: a later
	// write of the same pass starts from them, so that its optimistic lock holds the
	// resourceVersion the earlier write produced.
	written map[string]*etcdv1alpha2.EtcdMember
	pvcs    map[string]*corev1.PersistentVolumeClaim
}

// effects are what executed actions contribute to status, written by the pass's one status
// patch rather than by a write of their own.
type effects struct {
	// clusterID is the cluster ID the seed formed (KindLatchClusterID).
	clusterID string
	// backoff is the replacement back-off recorded (KindBackoff).
	backoff *etcdv1alpha2.ReplacementBackoff
	// removed is the member a KindRemove took out of etcd and deleted, so that status counts
	// what is left rather than what was there when the pass began.
	removed *removal
	// recovery is the quorum recovery recorded (KindStartRecovery); clearRecovery clears it
	// (KindFinishRecovery, KindAbortRecovery).
	recovery      *etcdv1alpha2.QuorumRecovery
	clearRecovery bool
	// authEnabled latches status.authEnabled (KindEnableAuth, KindLatchAuth).
	authEnabled bool
}

// removal is one executed removal: the EtcdMember, and the etcd member ID when it was in etcd.
type removal struct {
	member, reason string
	memberID       uint64
	inEtcd         bool
}

func (r *Reconciler) executor(o *observation, plan membership.Plan) *executor {
	return &executor{client: r.client, apiReader: r.apiReader, recorder: r.recorder, memory: r.memory, tlsCache: r.tlsCache, views: r.views, obs: o, plan: plan,
		written: map[string]*etcdv1alpha2.EtcdMember{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}}
}

// Event reasons of actions (docs/design/conditions-and-events.md).
const (
	eventSeedCreated         = "SeedCreated"
	eventClusterBootstrapped = "ClusterBootstrapped"
	eventMemberCreated       = "MemberCreated"
	eventLearnerAdded        = "LearnerAdded"
	eventLearnerPromoted     = "LearnerPromoted"
	eventLeaderMoved         = "LeaderMoved"
	eventMemberRemoved       = "MemberRemoved"
	eventClusterPaused       = "ClusterPaused"
	eventClusterResumed      = "ClusterResumed"
	eventQuorumGateBlocked   = "QuorumGateBlocked"
)

// Membership action types in metrics.
const (
	metricAddLearner = "AddLearner"
	metricPromote    = "Promote"
	metricRemove     = "Remove"
	metricMoveLeader = "MoveLeader"
)

// act runs the executor of the plan's step. Every step that mutates asks for the next pass
// after nextStepDelay: one change per pass, and an etcd-only change fires no watch.
func (x *executor) act(ctx context.Context) (step.Result, error) {
	a := x.plan.Action
	if a.Kind != membership.KindBlocked {
		x.memory.rearm(x.key(), warnQuorumBlocked)
	}
	log := logf.FromContext(ctx)
	if a.Mutates() {
		log.Info("Acting", "action", string(a.Kind), "member", a.Member, "memberID", etcdclient.FormatID(a.MemberID), "reason", a.Message)
	}
	run, ok := x.executors()[a.Kind]
	if !ok {
		// A planner/controller mismatch: retrying cannot help.
		return step.Result{}, reconcile.TerminalError(fmt.Errorf("the planner returned an unknown action %q", a.Kind))
	}
	res, err := run(ctx, a)
	if errors.Is(err, etcdclient.ErrAuthRequired) {
		// etcd older than 3.5.28 answers MemberList without credentials and refuses only the
		// change: the next pass asks whether auth is on (probeUnaskedAuth).
		x.memory.setAuthSuspected(x.key(), true)
	}
	if err != nil || res.Done() {
		return res, err
	}
	return step.Requeue(nextStepDelay, string(a.Kind)+" done"), nil
}

// executors maps each kind of action to its executor.
func (x *executor) executors() map[membership.Kind]func(context.Context, membership.Action) (step.Result, error) {
	return map[membership.Kind]func(context.Context, membership.Action) (step.Result, error){
		membership.KindNone:            x.none,
		membership.KindWait:            x.wait,
		membership.KindBlocked:         x.blocked,
		membership.KindCreateSeed:      x.createMember,
		membership.KindCreateMember:    x.createMember,
		membership.KindInitSeed:        x.initSeed,
		membership.KindLatchClusterID:  x.latchClusterID,
		membership.KindJoin:            x.join,
		membership.KindStage:           x.stage,
		membership.KindPromote:         x.promote,
		membership.KindRemoveOrphan:    x.removeOrphan,
		membership.KindRemove:          x.remove,
		membership.KindMoveLeader:      x.moveLeader,
		membership.KindDeletePVC:       x.deletePVC,
		membership.KindSetDormant:      x.setDormant,
		membership.KindWake:            x.wake,
		membership.KindDisarmCorrupt:   x.disarmCorrupt,
		membership.KindBackoff:         x.backoff,
		membership.KindReadopt:         x.readopt,
		membership.KindAuthorise:       x.authorise,
		membership.KindEnableAuth:      x.enableAuth,
		membership.KindLatchAuth:       x.latchAuth,
		membership.KindChangePassword:  x.changePassword,
		membership.KindStartRecovery:   x.startRecovery,
		membership.KindStopForRecovery: x.stopForRecovery,
		membership.KindForceNewCluster: x.forceNewCluster,
		membership.KindFinishRecovery:  x.finishRecovery,
		membership.KindAbortRecovery:   x.abortRecovery,
		membership.KindRefuseApproval:  x.refuseApproval,
	}
}

// none ends a pass with nothing to do: watches and the resync bring the next, unless the
// planner asked for one sooner (missing TLS material is looked for again).
func (x *executor) none(_ context.Context, a membership.Action) (step.Result, error) {
	return step.Requeue(a.RequeueAfter, a.Reason), nil
}

// wait ends a pass that waits for external state (a Pod to start, a learner to catch up).
func (x *executor) wait(ctx context.Context, a membership.Action) (step.Result, error) {
	logf.FromContext(ctx).V(1).Info("Waiting", "reason", a.Reason, "message", a.Message, "after", a.RequeueAfter)
	return step.Requeue(a.RequeueAfter, a.Reason), nil
}

// key is the cluster's pool, memory and metrics key.
func (x *executor) key() types.NamespacedName { return x.obs.key() }

// cluster is the EtcdCluster as observed.
func (x *executor) cluster() *etcdv1alpha2.EtcdCluster { return x.obs.cluster }

// etcd is the pass's etcd client. The planner plans etcd mutations only over an etcd view,
// which exists only once a client answered, so a missing client is a bug.
func (x *executor) etcd() (etcdAPI, error) {
	if x.obs.etcdClient == nil {
		return nil, reconcile.TerminalError(errors.New("an etcd action was planned without an etcd client"))
	}
	return x.obs.etcdClient, nil
}

// member returns a copy of the EtcdMember named name for an executor to patch: as this pass
// last wrote it, else as observed.
func (x *executor) member(name string) (*etcdv1alpha2.EtcdMember, error) {
	if m, ok := x.written[name]; ok {
		return m.DeepCopy(), nil
	}
	m, err := x.obs.member(name)
	if err != nil {
		return nil, err
	}
	return m.DeepCopy(), nil
}

// pvc returns a copy of the PVC named name for an executor to patch: as this pass last wrote
// it, else as observed.
func (x *executor) pvc(name string) (*corev1.PersistentVolumeClaim, error) {
	if p, ok := x.pvcs[name]; ok {
		return p.DeepCopy(), nil
	}
	p, err := x.obs.pvc(name)
	if err != nil {
		return nil, err
	}
	return p.DeepCopy(), nil
}

// event records an Event on the cluster.
func (x *executor) event(eventType, reason, note string) {
	x.recorder.Eventf(x.cluster(), nil, eventType, reason, reason, "%s", note)
}

// memberEvent records an Event on the cluster that also names the member.
func (x *executor) memberEvent(m *etcdv1alpha2.EtcdMember, eventType, reason, note string) {
	if m == nil || m.UID == "" {
		x.event(eventType, reason, note)
		return
	}
	x.recorder.Eventf(x.cluster(), m, eventType, reason, reason, "%s", note)
}

// stillPlanned re-reads etcd's member list right before a mutation and checks that the planner
// still chooses the same step over it: two operator replicas may overlap during a leader
// election, and the pass's list may be a few milliseconds old. A changed step waits.
func (x *executor) stillPlanned(ctx context.Context, cli etcdAPI, a membership.Action) (step.Result, error) {
	list, err := cli.MemberList(ctx)
	if err != nil {
		return step.Result{}, fmt.Errorf("re-reading etcd's member list before %s: %w", a.Kind, err)
	}
	again := x.plan.Replan(list)
	if again.Kind != a.Kind || again.Member != a.Member || again.MemberID != a.MemberID || again.InEtcd != a.InEtcd {
		return step.Requeue(nextStepDelay, fmt.Sprintf("etcd's membership changed during the pass: %s became %s", a.Kind, again.Kind)), nil
	}
	return step.Continue, nil
}

// waitingOn maps etcd's "not now" answers to a wait of after (no error, no Event), counts the
// outcome, and returns every other error as it is.
func (x *executor) waitingOn(op string, err error, after time.Duration, retryable ...error) (step.Result, error) {
	return waitingOn(x.key(), op, err, after, retryable...)
}

// waitingOn is the executor's waitingOn for code that has the cluster's key but no executor.
func waitingOn(key types.NamespacedName, op string, err error, after time.Duration, retryable ...error) (step.Result, error) {
	for _, r := range retryable {
		if errors.Is(err, r) {
			metrics.MembershipAction(key.Namespace, key.Name, op, metrics.OutcomeWaiting)
			return step.Requeue(after, err.Error()), nil
		}
	}
	metrics.MembershipAction(key.Namespace, key.Name, op, metrics.OutcomeError)
	return step.Result{}, err
}

func (x *executor) countAction(op, outcome string) {
	metrics.MembershipAction(x.key().Namespace, x.key().Name, op, outcome)
}

// patchMember merge-patches m from before, conditional on the resourceVersion read: a member
// changed meanwhile conflicts, and the pass is retried over what it now is.
func (x *executor) patchMember(ctx context.Context, m, before *etcdv1alpha2.EtcdMember, doing string) error {
	if err := x.client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("%s EtcdMember %s: %w", doing, m.Name, err)
	}
	x.written[m.Name] = m.DeepCopy()
	return nil
}
