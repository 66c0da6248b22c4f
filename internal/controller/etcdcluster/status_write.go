package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
)

// finish runs on every path of a pass that observed something: status, conditions and the PDB
// are rendered from the plan and written if they changed. The PDB goes first: once status shows
// a new target, the PDB already protects its quorum (a reader of both never sees a target whose
// quorum the PDB does not cover).
func (x *executor) finish(ctx context.Context) error {
	r := renderStatus(x.obs, &x.plan, x.effects)
	x.publishEndpointViews(&r.scope)
	var errs []error
	if err := x.applyPDB(ctx, int32(r.counts.Voters), r.scope.Target); err != nil { //nolint:gosec // G115: bounded by the member count
		errs = append(errs, err)
	}
	if err := x.writeStatus(ctx, &r); err != nil {
		errs = append(errs, err)
	}
	x.recordConditionMetrics(r.status.Conditions)
	x.recordSnapshotMetrics()
	x.recordClusterMetrics(&r)
	return errors.Join(errs...)
}

// writeStatus patches the cluster's status if it differs from what was read, and announces the
// transitions it records.
func (x *executor) writeStatus(ctx context.Context, r *renderedStatus) error {
	original := x.cluster()
	if equality.Semantic.DeepEqual(original.Status, r.status) {
		return nil
	}
	c := original.DeepCopy()
	c.Status = r.status
	// Optimistic lock: a pass that started from a stale cache must not write over a newer status
	// (nor announce a latch a previous pass already made); it conflicts and reruns.
	if err := x.client.Status().Patch(ctx, c, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		if x.plan.Lock.Adopted {
			return fmt.Errorf("recording the adoption of generation %d: %w", x.plan.Lock.ObservedGeneration, err)
		}
		return fmt.Errorf("patching EtcdCluster status: %w", err)
	}
	if x.plan.Lock.Adopted {
		failpoint.Inject(ctx, failpoint.SpecAdopted)
	}
	// Transitions are announced once the status that records them is written, so a pass from a
	// stale cache, which conflicts, announces nothing.
	x.transitionEvents(original, c)
	if original.Status.ClusterID == "" && c.Status.ClusterID != "" {
		x.event(corev1.EventTypeNormal, eventClusterBootstrapped, "cluster "+c.Status.ClusterID+" formed")
		failpoint.Inject(ctx, failpoint.ClusterIDLatched)
	}
	return nil
}

// transitionEvents emits one Warning per state transition into QuorumLost, AllMembersLost,
// missing TLS material, auth on that the spec does not ask for, or an expired deadline
// (docs/design/conditions-and-events.md); staying in a state emits nothing. Member-scoped
// transitions (MemberUnschedulable) are announced by the EtcdMember controller, which sees the
// member's own transition. A transition into Reconciled completes a roll this process started.
func (x *executor) transitionEvents(was, now *etcdv1alpha2.EtcdCluster) {
	had := func(t, reason string) bool {
		c := meta.FindStatusCondition(was.Status.Conditions, t)
		return c != nil && c.Reason == reason
	}
	for _, w := range []struct{ t, reason string }{
		{etcdv1alpha2.ConditionAvailable, membership.ReasonQuorumLost},
		{etcdv1alpha2.ConditionAvailable, membership.ReasonAllMembersLost},
		{etcdv1alpha2.ConditionAvailable, membership.ReasonCertManagerNotInstalled},
		{etcdv1alpha2.ConditionAvailable, membership.ReasonAuthRequiredNotConfigured},
		{etcdv1alpha2.ConditionDegraded, membership.ReasonTLSSecretMissing},
		{etcdv1alpha2.ConditionDegraded, membership.ReasonCertificateInvalid},
		{etcdv1alpha2.ConditionAvailable, membership.ReasonRestoreFailed},
		{etcdv1alpha2.ConditionProgressing, membership.ReasonDeadlineExceeded},
		{etcdv1alpha2.ConditionProgressing, membership.ReasonBootstrapStalled},
		{etcdv1alpha2.ConditionProgressing, membership.ReasonStorageExpansionUnsupported},
	} {
		cond := meta.FindStatusCondition(now.Status.Conditions, w.t)
		if cond != nil && cond.Reason == w.reason && !had(w.t, w.reason) {
			reason := w.reason
			if reason == membership.ReasonBootstrapStalled {
				reason = eventDeadlineExceeded
			}
			x.event(corev1.EventTypeWarning, reason, cond.Message)
		}
	}
	if cond := meta.FindStatusCondition(now.Status.Conditions, etcdv1alpha2.ConditionProgressing); cond != nil && cond.Reason == membership.ReasonReconciled {
		// Events are an audit trail, not state: an operator restarted mid-roll announces no
		// completion.
		if x.memory.endRoll(x.key()) {
			x.event(corev1.EventTypeNormal, eventRollingUpdateCompleted,
				fmt.Sprintf("every member runs the latched template (%d members updated)", now.Status.UpdatedMembers))
		}
	}
}

func (x *executor) recordConditionMetrics(conditions []metav1.Condition) {
	states := map[string]metrics.ConditionState{}
	for _, t := range []string{etcdv1alpha2.ConditionAvailable, etcdv1alpha2.ConditionDegraded} {
		if cond := meta.FindStatusCondition(conditions, t); cond != nil {
			states[t] = metrics.ConditionState{Status: string(cond.Status), Reason: cond.Reason}
		}
	}
	metrics.SetClusterConditions(x.key().String(), states)
}

// recordSnapshotMetrics sets the cluster's last-snapshot gauges from status.lastSnapshot as
// this pass renders it, so that they are right after an operator restart too, before any
// snapshot completes (docs/backup-restore.md, "Metrics"). A cluster that never had a Complete
// snapshot has no series.
func (x *executor) recordSnapshotMetrics() {
	if last := x.obs.lastSnapshot; last != nil {
		metrics.SetLastSnapshot(x.key().Namespace, x.key().Name, last.CompletedAt.Time, x.obs.lastSnapshotSize)
	}
}

// publishEndpointViews hands the EtcdMember controller what this pass saw of every member's
// endpoint (unreachable, lagging), which it classifies into the member's Healthy.
func (x *executor) publishEndpointViews(s *membership.Scope) {
	if x.views == nil {
		return
	}
	views := map[string]etcdview.View{}
	for name, v := range membership.EndpointViews(s) {
		views[name] = etcdview.View{Unreachable: v.Unreachable, Lagging: v.Lagging, HashDiffersAt: v.HashDiffersAt}
	}
	x.views.Publish(x.key(), views)
}
