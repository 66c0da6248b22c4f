package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// moveLeader hands leadership to a.MemberID before the leader a.Member is removed (a scale-down,
// a replacement, a Memory surge) or restarted by a roll: clients then see a planned hand-over
// instead of an election. The next pass plans the removal or restart over the new leader.
func (x *executor) moveLeader(ctx context.Context, a membership.Action) (step.Result, error) {
	cli, err := x.etcd()
	if err != nil {
		return step.Result{}, err
	}
	if err := cli.MoveLeader(ctx, a.MemberID); err != nil {
		return x.waitingOn(metricMoveLeader, fmt.Errorf("moving leadership to %s: %w", etcdclient.FormatID(a.MemberID), err), membership.MembershipPoll,
			etcdclient.ErrBadLeaderTransferee, etcdclient.ErrNotLeader, etcdclient.ErrNoLeader, etcdclient.ErrTimeout)
	}
	x.countAction(metricMoveLeader, metrics.OutcomeSuccess)
	failpoint.Inject(ctx, failpoint.LeaderMoved)
	why := "removing"
	if a.Reason == membership.ReasonRollingUpdate {
		why = "restarting"
	}
	x.event(corev1.EventTypeNormal, eventLeaderMoved, fmt.Sprintf("moved leadership to %s before %s %s", etcdclient.FormatID(a.MemberID), why, a.Member))
	return step.Continue, nil
}
