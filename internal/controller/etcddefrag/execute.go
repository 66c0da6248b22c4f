package etcddefrag

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/defrag"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// Event reasons (docs/defrag.md, "Events").
const (
	eventDefragStarted      = "DefragStarted"
	eventMemberDefragmented = "MemberDefragmented"
	eventMemberDefragFailed = "MemberDefragFailed"
	eventLeaderMoved        = "LeaderMoved"
	eventAlarmDisarmed      = "AlarmDisarmed"
	eventDefragCompleted    = "DefragCompleted"
	eventDefragFailed       = "DefragFailed"
)

// pass is one reconcile of one run: what was read, what was observed, and the status it
// writes once at the end.
type pass struct {
	r      *Reconciler
	run    *etcdv1alpha2.EtcdDefrag
	obs    *observation
	now    time.Time
	status etcdv1alpha2.EtcdDefragStatus
	// ready is the Ready condition to write; nil keeps the one read.
	ready *metav1.Condition
}

// admit starts a Pending run when defrag.Admit and etcd allow, or records why it waits.
func (x *pass) admit(ctx context.Context) (step.Result, error) {
	x.status.Phase = etcdv1alpha2.DefragPhasePending
	var runs etcdv1alpha2.EtcdDefragList
	// Uncached: two runs admitted from a stale cache would both start.
	if err := x.r.apiReader.List(ctx, &runs, client.InNamespace(x.run.Namespace)); err != nil {
		return step.Result{}, fmt.Errorf("listing EtcdDefrags: %w", err)
	}
	a := defrag.Admit(x.run, runs.Items, x.obs.cluster)
	if a.Admitted && !x.obs.known {
		a = defrag.Admission{Reason: defrag.ReasonWaitingForCluster, Message: x.obs.unknown}
	}
	if !a.Admitted {
		x.setReady(metav1.ConditionFalse, a.Reason, a.Message)
		return step.Requeue(queuePoll, a.Reason), nil
	}
	x.status.Phase = etcdv1alpha2.DefragPhaseRunning
	x.status.StartedAt = &metav1.Time{Time: x.now}
	x.status.Members = defrag.Start(x.run.Spec.Rule, x.obs.view)
	x.setReady(metav1.ConditionFalse, defrag.ReasonRunning, "defragmenting members one at a time: followers by name, the leader last")
	x.clusterEvent(corev1.EventTypeNormal, eventDefragStarted, fmt.Sprintf("EtcdDefrag %s started over %d members", x.run.Name, len(x.status.Members)))
	return step.Requeue(nextStepDelay, "started"), nil
}

// advance takes one step of a Running run.
func (x *pass) advance(ctx context.Context) (step.Result, error) {
	if x.obs.cluster == nil {
		return x.finish(defrag.Step{Phase: etcdv1alpha2.DefragPhaseFailed, Reason: defrag.ReasonClusterNotFound,
			Message: fmt.Sprintf("EtcdCluster %s was deleted during the run", x.run.Spec.ClusterRef.Name)}), nil
	}
	if !x.obs.known {
		x.setReady(metav1.ConditionFalse, defrag.ReasonWaitingForHealthyMembers, x.obs.unknown)
		return step.Requeue(healthPoll, "etcd unknown"), nil
	}
	started := x.now
	if x.status.StartedAt != nil {
		started = x.status.StartedAt.Time
	}
	s := defrag.Next(defrag.Run{Rule: x.run.Spec.Rule, Members: x.status.Members, Started: started, Quota: x.obs.quota}, x.obs.view)
	switch s.Kind {
	case defrag.StepWait:
		x.setReady(metav1.ConditionFalse, s.Reason, s.Message)
		return step.Requeue(healthPoll, s.Reason), nil
	case defrag.StepSkip:
		x.status.Members = defrag.Record(x.status.Members, s.Member, etcdv1alpha2.DefragOutcomeSkipped, 0, 0, s.Message, x.now)
		return step.Requeue(nextStepDelay, "skipped"), nil
	case defrag.StepMoveLeader:
		return x.moveLeader(ctx, s)
	case defrag.StepDefragment:
		return x.defragment(ctx, s)
	case defrag.StepDisarm:
		if err := x.disarmNoSpace(ctx); err != nil {
			x.setReady(metav1.ConditionFalse, defrag.ReasonRunning, "every member is below the quota; disarming NOSPACE failed and is retried: "+err.Error())
			return step.Requeue(healthPoll, "disarm failed"), nil
		}
		return x.finish(s), nil
	default:
		return x.finish(s), nil
	}
}

// defragment defragments one member and records its outcome. A failure is the member's
// outcome, not the pass's error: the run goes on with the others and ends Failed.
func (x *pass) defragment(ctx context.Context, s defrag.Step) (step.Result, error) {
	ep := x.obs.endpoints[s.Member]
	before := sizeOf(x.obs.view, s.Member)
	log := logf.FromContext(ctx).WithValues("member", s.Member, "memberID", etcdclient.FormatID(x.obs.ids[s.Member]))
	if s.Disruptive {
		log.Info("Defragmenting the only voter: the cluster does not serve until it finishes")
	}
	start := time.Now()
	err := x.obs.cli.Defragment(ctx, ep)
	took := time.Since(start).Round(time.Millisecond)
	done := x.r.clock.Now()
	if err != nil {
		x.status.Members = defrag.Record(x.status.Members, s.Member, etcdv1alpha2.DefragOutcomeFailed, before, 0, err.Error(), done)
		x.event(corev1.EventTypeWarning, eventMemberDefragFailed, fmt.Sprintf("defragmenting member %s (%s) failed after %s: %v", s.Member, etcdclient.FormatID(x.obs.ids[s.Member]), took, err))
		return step.Requeue(nextStepDelay, "member failed"), nil
	}
	after := before
	if st, err := x.obs.cli.Status(ctx, ep); err == nil {
		after = st.DBSize
	}
	x.status.Members = defrag.Record(x.status.Members, s.Member, etcdv1alpha2.DefragOutcomeDefragmented, before, after, "", done)
	x.status.Defragmented = defrag.Defragmented(x.status.Members)
	x.event(corev1.EventTypeNormal, eventMemberDefragmented, fmt.Sprintf("defragmented member %s (%s) in %s: %s → %s",
		s.Member, etcdclient.FormatID(x.obs.ids[s.Member]), took, defrag.Bytes(before), defrag.Bytes(after)))
	log.Info("Defragmented a member", "took", took, "dbSizeBefore", before, "dbSizeAfter", after)
	return step.Requeue(nextStepDelay, "member defragmented"), nil
}

// moveLeader moves leadership off the leader before its turn.
func (x *pass) moveLeader(ctx context.Context, s defrag.Step) (step.Result, error) {
	to := x.obs.ids[s.Target]
	if err := x.obs.cli.MoveLeader(ctx, to); err != nil {
		// Waiting: the leader changed or the transferee fell behind; the next pass plans again.
		x.setReady(metav1.ConditionFalse, defrag.ReasonWaitingForHealthyMembers, fmt.Sprintf("moving leadership to %s before defragmenting leader %s failed: %v", s.Target, s.Member, err))
		return step.Requeue(healthPoll, "move leader failed"), nil
	}
	x.clusterEvent(corev1.EventTypeNormal, eventLeaderMoved, fmt.Sprintf("moved leadership from %s to %s (%s) before defragmenting it", s.Member, s.Target, etcdclient.FormatID(to)))
	return step.Requeue(nextStepDelay, "leader moved"), nil
}

// disarmNoSpace disarms every NOSPACE alarm: one per member that raised it.
func (x *pass) disarmNoSpace(ctx context.Context) error {
	alarms, err := x.obs.cli.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("listing alarms: %w", err)
	}
	var errs []error
	for _, a := range alarms {
		if a.Type != etcdclient.AlarmNoSpace {
			continue
		}
		if _, err := x.obs.cli.AlarmDisarm(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("disarming the NOSPACE alarm of %s: %w", etcdclient.FormatID(a.MemberID), err))
			continue
		}
		x.clusterEvent(corev1.EventTypeNormal, eventAlarmDisarmed, fmt.Sprintf("disarmed the NOSPACE alarm raised by member %s: every member's database is below the %s quota after EtcdDefrag %s",
			etcdclient.FormatID(a.MemberID), defrag.Bytes(x.obs.quota), x.run.Name))
	}
	return errors.Join(errs...)
}

// finish makes the run final.
func (x *pass) finish(s defrag.Step) step.Result {
	x.status.Members = defrag.SkipPending(x.status.Members, s.Message, x.now)
	x.status.Phase = s.Phase
	x.status.CompletedAt = &metav1.Time{Time: x.now}
	x.status.Defragmented = defrag.Defragmented(x.status.Members)
	st, reason := corev1.EventTypeNormal, eventDefragCompleted
	cond := metav1.ConditionTrue
	if s.Phase == etcdv1alpha2.DefragPhaseFailed {
		st, reason, cond = corev1.EventTypeWarning, eventDefragFailed, metav1.ConditionFalse
	}
	x.setReady(cond, s.Reason, s.Message)
	x.event(st, reason, fmt.Sprintf("EtcdDefrag %s %s: %s", x.run.Name, s.Phase, s.Message))
	return step.Stop("final")
}

func sizeOf(v defrag.View, name string) int64 {
	for _, m := range v.Members {
		if m.Name == name {
			return m.Sizes.DBSize
		}
	}
	return 0
}

func (x *pass) setReady(st metav1.ConditionStatus, reason, msg string) {
	x.ready = &metav1.Condition{Type: etcdv1alpha2.ConditionReady, Status: st, Reason: reason, Message: msg, ObservedGeneration: x.run.Generation}
}

// event records an Event on the run, naming its cluster.
func (x *pass) event(eventType, reason, note string) {
	x.r.recorder.Eventf(x.run, x.obs.cluster, eventType, reason, reason, "%s", note)
}

// clusterEvent records an Event on the cluster, naming the run: what the person on call reads
// with kubectl describe etcdcluster.
func (x *pass) clusterEvent(eventType, reason, note string) {
	if x.obs.cluster == nil {
		x.event(eventType, reason, note)
		return
	}
	x.r.recorder.Eventf(x.obs.cluster, x.run, eventType, reason, reason, "%s", note)
}

// writeStatus patches the run's status once, if it changed.
func (x *pass) writeStatus(ctx context.Context) error {
	if x.ready != nil {
		meta.SetStatusCondition(&x.status.Conditions, *x.ready)
	}
	if x.status.Phase == "" {
		x.status.Phase = etcdv1alpha2.DefragPhasePending
	}
	if equality.Semantic.DeepEqual(x.run.Status, x.status) {
		return nil
	}
	original := x.run.DeepCopy()
	x.run.Status = x.status
	// Optimistic lock: a pass from a stale cache must not write a member's outcome twice or
	// undo a final phase.
	if err := x.r.client.Status().Patch(ctx, x.run, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching EtcdDefrag status: %w", err)
	}
	return nil
}
