package etcdcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// blocked records a quorum-gate refusal (docs/design/quorum.md): a metric every time, and one
// Warning when the cluster starts waiting. The message names the action and the unhealthy
// members, so a new Event means something changed; retries of the same refusal are silent.
func (x *executor) blocked(ctx context.Context, a membership.Action) (step.Result, error) {
	logf.FromContext(ctx).V(1).Info("Blocked", "reason", a.Reason, "message", a.Message, "after", a.RequeueAfter)
	x.countAction(metricType(a.Refused), metrics.OutcomeRefused)
	kind := "refused"
	if a.Gate != nil {
		kind = string(a.Gate.Reason)
	}
	if x.memory.warnOnce(x.key(), warnQuorumBlocked, a.Message) {
		x.event(corev1.EventTypeWarning, eventQuorumGateBlocked, a.Message+" ("+kind+")")
	}
	return step.Requeue(a.RequeueAfter, a.Reason), nil
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
