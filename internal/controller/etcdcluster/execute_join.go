package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// join adds a pending member as a learner, unless a previous pass already did (a.InEtcd), and
// patches its initialCluster from the member list etcd returned (docs/design/membership-flows.md,
// scale up). The patch must precede any promotion: a learner without a Pod never catches up.
func (x *executor) join(ctx context.Context, a membership.Action) (step.Result, error) {
	m, err := x.member(a.Member)
	if err != nil {
		return step.Result{}, err
	}
	list := x.obs.etcd.Members
	if !a.InEtcd {
		cli, err := x.etcd()
		if err != nil {
			return step.Result{}, err
		}
		if res, err := x.stillPlanned(ctx, cli, a); err != nil || res.Done() {
			return res, err
		}
		added, after, err := cli.MemberAddAsLearner(ctx, []string{a.PeerURL})
		switch {
		case errors.Is(err, etcdclient.ErrPeerURLExists):
			// Another replica (or our previous life) added it meanwhile: that is success.
			if after, err = cli.MemberList(ctx); err != nil {
				return step.Result{}, fmt.Errorf("listing members after a duplicate add of %s: %w", m.Name, err)
			}
		case err != nil:
			return x.waitingOn(metricAddLearner, fmt.Errorf("adding %s as a learner: %w", m.Name, err), membership.MembershipPoll,
				etcdclient.ErrUnhealthyCluster, etcdclient.ErrTooManyLearners, etcdclient.ErrNoLeader, etcdclient.ErrNotEnoughStartedMembers)
		default:
			x.countAction(metricAddLearner, metrics.OutcomeSuccess)
			failpoint.Inject(ctx, failpoint.LearnerAdded)
			x.memberEvent(m, corev1.EventTypeNormal, eventLearnerAdded, fmt.Sprintf("added %s as learner %s", m.Name, added.IDHex()))
		}
		list = after
	}
	if ic := membership.InitialCluster(list, m.Name, a.PeerURL); ic != m.Spec.InitialCluster {
		// A staged member has it already: its Pod was built before the add.
		if err := x.patchInitialCluster(ctx, m, ic); err != nil {
			return step.Result{}, err
		}
		failpoint.Inject(ctx, failpoint.LearnerInitialClusterPatched)
	}
	return step.Continue, nil
}

// stage gives a pending member its initial cluster ahead of its add (docs/design/membership-
// flows.md, "Staged joins"): the member controller builds its Pod now, and the data-dir guard
// holds its etcd until the add, which a later pass makes.
func (x *executor) stage(ctx context.Context, a membership.Action) (step.Result, error) {
	m, err := x.member(a.Member)
	if err != nil {
		return step.Result{}, err
	}
	if err := x.patchInitialCluster(ctx, m, a.InitialCluster); err != nil {
		return step.Result{}, err
	}
	failpoint.Inject(ctx, failpoint.MemberStaged)
	return step.Continue, nil
}

// patchInitialCluster sets spec.initialCluster and the member's component label: from then on
// the member controller builds its PVC and Pod.
func (x *executor) patchInitialCluster(ctx context.Context, m *etcdv1alpha2.EtcdMember, initialCluster string) error {
	before := m.DeepCopy()
	m.Spec.InitialCluster = initialCluster
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	for k, v := range desired.MemberLabels(x.cluster().Name, m.Name) {
		m.Labels[k] = v
	}
	return x.patchMember(ctx, m, before, "patching the initial cluster of")
}
