package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// Events of quorum-loss recovery (docs/design/quorum-recovery.md).
const (
	eventQuorumRecoveryStarted   = "QuorumRecoveryStarted"
	eventQuorumRecoveryCompleted = "QuorumRecoveryCompleted"
	eventQuorumRecoveryAborted   = "QuorumRecoveryAborted"
	eventRecoveryApprovalIgnored = "RecoveryApprovalIgnored"
)

// startRecovery records status.quorumRecovery (written by the pass's status patch) and
// announces the survivor and the raft index it recovers from.
func (x *executor) startRecovery(_ context.Context, a membership.Action) (step.Result, error) {
	r := a.Recovery.DeepCopy()
	r.StartedAt = metav1.NewTime(x.obs.now)
	x.effects.recovery = r
	// A pass that reads the cluster before the last one's status patch reached the cache plans
	// the same start again: one Event per recovery.
	if x.memory.warnOnce(x.key(), noteRecoveryStarted, fmt.Sprintf("%s/%d", r.Member, r.Index)) {
		x.event(corev1.EventTypeNormal, eventQuorumRecoveryStarted, fmt.Sprintf("%s: %s", r.Mode, a.Message))
	}
	return step.Requeue(nextStepDelay, string(a.Kind)), nil
}

// stopForRecovery makes a member other than the survivor dormant: its Pod goes, its EtcdMember
// and PVC stay until the survivor serves alone.
func (x *executor) stopForRecovery(ctx context.Context, a membership.Action) (step.Result, error) {
	m, err := x.member(a.Member)
	if err != nil {
		return step.Result{}, err
	}
	before := m.DeepCopy()
	m.Spec.Dormant = true
	if err := x.patchMember(ctx, m, before, "stopping for quorum recovery"); err != nil {
		return step.Result{}, err
	}
	return step.Continue, nil
}

// forceNewCluster sets the survivor's Pod annotation; the guard in the Pod acts on it. Setting
// the value it already has is a no-op, so every pass that waits for the forced start may plan it.
func (x *executor) forceNewCluster(ctx context.Context, a membership.Action) (step.Result, error) {
	pod := x.obs.pods[a.Member]
	if pod == nil {
		return step.Requeue(a.RequeueAfter, "no Pod"), nil
	}
	if pod.Annotations[etcdv1alpha2.AnnotationForceNewCluster] == a.ForceValue {
		return step.Requeue(a.RequeueAfter, "waiting for the forced start"), nil
	}
	if err := x.annotatePod(ctx, pod, a.ForceValue); err != nil {
		return step.Result{}, err
	}
	logf.FromContext(ctx).Info("Asked the data-dir guard for one start with --force-new-cluster", "member", a.Member, "request", a.ForceValue)
	return step.Requeue(a.RequeueAfter, "forced"), nil
}

// annotatePod sets (or, with an empty value, removes) the force-new-cluster annotation.
func (x *executor) annotatePod(ctx context.Context, pod *corev1.Pod, value string) error {
	var patch []byte
	if value == "" {
		patch = fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, etcdv1alpha2.AnnotationForceNewCluster)
	} else {
		patch = fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, etcdv1alpha2.AnnotationForceNewCluster, value)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	if err := x.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("annotating Pod %s: %w", pod.Name, err)
	}
	return nil
}

// finishRecovery clears the record, the Pod annotation and the approval; scale-up grows the
// cluster back from the next pass.
func (x *executor) finishRecovery(ctx context.Context, a membership.Action) (step.Result, error) {
	if pod := x.obs.pods[a.Member]; pod != nil && pod.Annotations[etcdv1alpha2.AnnotationForceNewCluster] != "" {
		if err := x.annotatePod(ctx, pod, ""); err != nil {
			return step.Result{}, err
		}
	}
	if err := x.clearApproval(ctx); err != nil {
		return step.Result{}, err
	}
	r := x.obs.cluster.Status.QuorumRecovery
	x.effects.clearRecovery = true
	// As for the start: a pass that read the status before this one's patch finishes again.
	if x.memory.warnOnce(x.key(), noteRecoveryCompleted, fmt.Sprintf("%s/%d", r.Member, r.Index)) {
		x.event(corev1.EventTypeNormal, eventQuorumRecoveryCompleted,
			fmt.Sprintf("recovered from %s (%s) at raft index %d: %s", r.Member, r.Mode, r.Index, a.Message))
	}
	return step.Requeue(nextStepDelay, string(a.Kind)), nil
}

// abortRecovery clears a record whose survivor went before the force, or whose force never
// happened, and the request on its Pod.
func (x *executor) abortRecovery(ctx context.Context, a membership.Action) (step.Result, error) {
	if pod := x.obs.pods[a.Member]; pod != nil && pod.Annotations[etcdv1alpha2.AnnotationForceNewCluster] != "" {
		if err := x.annotatePod(ctx, pod, ""); err != nil {
			return step.Result{}, err
		}
	}
	x.effects.clearRecovery = true
	x.event(corev1.EventTypeWarning, eventQuorumRecoveryAborted, a.Message)
	return step.Requeue(a.RequeueAfter, string(a.Kind)), nil
}

// refuseApproval reports an approval that does not match the candidate, once per value.
func (x *executor) refuseApproval(_ context.Context, a membership.Action) (step.Result, error) {
	if x.memory.warnOnce(x.key(), warnApprovalIgnored, a.Approval) {
		x.event(corev1.EventTypeWarning, eventRecoveryApprovalIgnored, a.Message)
	}
	return step.Requeue(a.RequeueAfter, string(a.Kind)), nil
}

// clearApproval removes approve-recovery from the EtcdCluster: it approved one recovery.
func (x *executor) clearApproval(ctx context.Context) error {
	c := x.obs.cluster
	if _, ok := c.Annotations[etcdv1alpha2.AnnotationApproveRecovery]; !ok {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, etcdv1alpha2.AnnotationApproveRecovery)
	p := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace}}
	if err := x.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("removing %s: %w", etcdv1alpha2.AnnotationApproveRecovery, err)
	}
	return nil
}
