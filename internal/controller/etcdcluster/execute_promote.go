package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// promote promotes a started learner to a voter (docs/design/membership-flows.md, scale up).
// etcd's "not in sync yet" is waiting, not failure; "not a learner" means a previous pass did it.
func (x *executor) promote(ctx context.Context, a membership.Action) (step.Result, error) {
	m, err := x.member(a.Member)
	if err != nil {
		return step.Result{}, err
	}
	cli, err := x.etcd()
	if err != nil {
		return step.Result{}, err
	}
	if _, err := cli.MemberPromote(ctx, a.MemberID); err != nil && !errors.Is(err, etcdclient.ErrMemberNotLearner) {
		return x.waitingOn(metricPromote, fmt.Errorf("promoting %s: %w", m.Name, err), membership.PromoteRetry,
			etcdclient.ErrLearnerNotReady, etcdclient.ErrNotEnoughStartedMembers, etcdclient.ErrUnhealthyCluster, etcdclient.ErrNoLeader)
	}
	x.countAction(metricPromote, metrics.OutcomeSuccess)
	failpoint.Inject(ctx, failpoint.LearnerPromoted)
	x.memberEvent(m, corev1.EventTypeNormal, eventLearnerPromoted, fmt.Sprintf("promoted %s (%s) to voter", m.Name, etcdclient.FormatID(a.MemberID)))
	_, err = x.patchMemberStatus(ctx, m, etcdclient.FormatID(a.MemberID), true, m.Status.Version)
	return step.Continue, err
}
