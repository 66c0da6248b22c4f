package etcdcluster

import (
	"context"

	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// initSeed is bootstrap state B2 (docs/design/membership-flows.md): pre-stamp the seed as a
// voter (it founds the cluster as one, and its Pod's role label must not lag), then give it
// --initial-cluster = itself and its component label. From then on its member controller builds
// its PVC and Pod.
func (x *executor) initSeed(ctx context.Context, a membership.Action) (step.Result, error) {
	m, err := x.member(a.Member)
	if err != nil {
		return step.Result{}, err
	}
	stamped, err := x.patchMemberStatus(ctx, m, m.Status.MemberID, true, m.Status.Version)
	if err != nil {
		return step.Result{}, err
	}
	if stamped {
		// Only after a write: a pass that finds the stamp from a crashed pass goes straight on
		// to the initialCluster patch, or a recurring crash here would livelock bootstrap.
		failpoint.Inject(ctx, failpoint.SeedVoterStamped)
	}
	if err := x.patchInitialCluster(ctx, m, a.InitialCluster); err != nil {
		return step.Result{}, err
	}
	failpoint.Inject(ctx, failpoint.SeedInitialClusterPatched)
	return step.Continue, nil
}

// latchClusterID is bootstrap state B4: the seed formed the cluster, and its cluster ID is
// written by the pass's status patch.
func (x *executor) latchClusterID(_ context.Context, a membership.Action) (step.Result, error) {
	x.effects.clusterID = a.ClusterID
	return step.Continue, nil
}
