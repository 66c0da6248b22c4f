package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
)

// nextStepDelay is how soon the pass after a successful step runs: one step per pass (style.md
// rule 5), without waiting for a watch that an etcd-only change would never fire.
const nextStepDelay = 200 * time.Millisecond

// Event reasons of actions (behaviour.md §23).
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

// planAndAct asks the planner for this pass's step and performs it (behaviour.md §2 steps 6–7).
func (p *pass) planAndAct(ctx context.Context) (ctrl.Result, error) {
	p.action = membership.Next(p.scope())
	a := p.action
	if a.Kind != membership.KindBlocked {
		p.r.mu.Lock()
		delete(p.r.blockedWarned, p.nsName())
		p.r.mu.Unlock()
	}
	log := logf.FromContext(ctx)
	if a.Mutates() {
		log.Info("Acting", "action", string(a.Kind), "member", a.Member, "memberID", etcdclient.FormatID(a.MemberID), "reason", a.Message)
	}
	var err error
	switch a.Kind {
	case membership.KindNone:
		// Zero leaves it to watches and the resync; missing TLS material asks for more.
		return ctrl.Result{RequeueAfter: a.RequeueAfter}, nil
	case membership.KindWait:
		log.V(1).Info("Waiting", "reason", a.Reason, "message", a.Message, "after", a.RequeueAfter)
		return ctrl.Result{RequeueAfter: a.RequeueAfter}, nil
	case membership.KindBlocked:
		log.V(1).Info("Blocked", "reason", a.Reason, "message", a.Message, "after", a.RequeueAfter)
		p.blocked(a)
		return ctrl.Result{RequeueAfter: a.RequeueAfter}, nil
	case membership.KindCreateSeed:
		err = p.createMember(ctx, true)
	case membership.KindInitSeed:
		err = p.initSeed(ctx, a)
	case membership.KindLatchClusterID:
		p.cluster.Status.ClusterID = a.ClusterID // written by the deferred status patch
	case membership.KindJoin:
		err = p.join(ctx, a)
	case membership.KindPromote:
		err = p.promote(ctx, a)
	case membership.KindRemoveOrphan:
		err = p.removeOrphan(ctx, a)
	case membership.KindCreateMember:
		err = p.createMember(ctx, false)
	case membership.KindWake:
		err = p.wake(ctx, a)
	case membership.KindMoveLeader:
		err = p.moveLeader(ctx, a)
	case membership.KindRemove:
		err = p.remove(ctx, a)
	case membership.KindDeletePVC:
		err = p.deletePVC(ctx, a)
	case membership.KindSetDormant:
		err = p.setDormant(ctx, a)
	case membership.KindDisarmCorrupt:
		err = p.disarmCorrupt(ctx, a)
	case membership.KindBackoff:
		p.backoff(a)
		return ctrl.Result{RequeueAfter: a.RequeueAfter}, nil
	case membership.KindReadopt:
		err = p.readopt(ctx, a)
	case membership.KindAuthorise:
		err = p.authorise(ctx, a)
	default:
		// A planner/controller mismatch: retrying cannot help.
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("the planner returned an unknown action %q", a.Kind))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: nextStepDelay}, nil
}

// blocked records a quorum-gate refusal: one Warning Event when the cluster starts waiting, a
// metric every time.
func (p *pass) blocked(a membership.Action) {
	metrics.MembershipAction(metricType(a.Refused), metrics.OutcomeRefused)
	kind := "refused"
	if a.Gate != nil {
		kind = string(a.Gate.Reason)
	}
	// One Event per refusal, not per retry: the message names the action and the unhealthy
	// members, so a new Event means something changed.
	p.r.mu.Lock()
	key := p.nsName()
	first := p.r.blockedWarned[key] != a.Message
	p.r.blockedWarned[key] = a.Message
	p.r.mu.Unlock()
	if first {
		p.event(corev1.EventTypeWarning, eventQuorumGateBlocked, a.Message+" ("+kind+")")
	}
}

// metricType names the membership action of a planner step in metrics.
func metricType(k membership.Kind) string {
	switch k {
	case membership.KindJoin, membership.KindCreateMember:
		return metricAddLearner
	case membership.KindPromote:
		return metricPromote
	case membership.KindRemove, membership.KindRemoveOrphan:
		return metricRemove
	case membership.KindMoveLeader:
		return metricMoveLeader
	}
	return string(k)
}

// event records an Event on the cluster.
func (p *pass) event(eventType, reason, note string) {
	p.r.recorder.Eventf(p.cluster, nil, eventType, reason, reason, "%s", note)
}

// memberEvent records an Event on the cluster that also names the member.
func (p *pass) memberEvent(m *etcdv1alpha2.EtcdMember, eventType, reason, note string) {
	if m == nil || m.UID == "" {
		p.event(eventType, reason, note)
		return
	}
	p.r.recorder.Eventf(p.cluster, m, eventType, reason, reason, "%s", note)
}

func (p *pass) nsName() types.NamespacedName {
	return types.NamespacedName{Namespace: p.cluster.Namespace, Name: p.cluster.Name}
}

// waitingOn maps etcd's "not now" answers to a waiting error, and counts the outcome.
func waitingOn(op string, err error, after time.Duration, retryable ...error) error {
	for _, r := range retryable {
		if errors.Is(err, r) {
			metrics.MembershipAction(op, metrics.OutcomeWaiting)
			return &errWaiting{after: after, msg: err.Error()}
		}
	}
	metrics.MembershipAction(op, metrics.OutcomeError)
	return err
}

// stillPlanned re-reads etcd's member list right before a mutation and checks that the planner
// still chooses the same step over it (behaviour.md §3: two operator replicas may overlap during
// leader election, and the pass's list may be a few milliseconds old).
func (p *pass) stillPlanned(ctx context.Context, a membership.Action) error {
	list, err := p.etcd.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("re-reading etcd's member list before %s: %w", a.Kind, err)
	}
	p.view.Members = list
	again := membership.Next(p.scope())
	if again.Kind != a.Kind || again.Member != a.Member || again.MemberID != a.MemberID || again.InEtcd != a.InEtcd {
		return &errWaiting{after: nextStepDelay, msg: fmt.Sprintf("etcd's membership changed during the pass: %s became %s", a.Kind, again.Kind)}
	}
	return nil
}

// newController is the controlling ownerReference of a member.
func newController(c *etcdv1alpha2.EtcdCluster) metav1.OwnerReference {
	return *metav1.NewControllerRef(c, etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
}
