package operator

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcddefrag"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdsnapshot"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
)

// controllerSetup registers one controller with the manager. It has the shape of kubebuilder's
// SetupWithManager, so a reconciler's method value can be listed directly.
type controllerSetup func(mgr ctrl.Manager) error

// controllers returns the setup of every controller the operator runs, in registration order.
//
// This is the one place where controllers are added. Each lives in its own package under
// internal/controller/ and receives what it needs from Options through its constructor (for example the
// etcd image repository, the cluster domain and the graces), so that the controller packages never
// import this one. Concurrency needs no wiring: managerOptions sets it for every controller.
//
// Each controller gets its own etcd client pool: a pool holds one client per cluster, keyed by the
// endpoints it was dialled with, and the two controllers dial different endpoint sets (the cluster
// controller every member, the member controller the ones it needs for its finalizer), so a shared
// pool would close and re-dial on every alternation.
func controllers(opts Options) []controllerSetup {
	// The cluster controller asks every member for its Status on every pass; the member
	// controller turns what it saw into each member's Healthy.
	views := etcdview.NewBoard()
	clusterOpts := []etcdcluster.Option{
		etcdcluster.WithOrphanMemberGrace(opts.OrphanMemberGrace),
		etcdcluster.WithEtcdViews(views),
		etcdcluster.WithImageRepository(opts.EtcdImageRepository),
		etcdcluster.WithGuardImage(opts.DataGuardImage),
		etcdcluster.WithClusterDomain(opts.ClusterDomain),
	}
	memberOpts := []etcdmember.Option{
		etcdmember.WithImageRepository(opts.EtcdImageRepository),
		etcdmember.WithGuardImage(opts.DataGuardImage),
		etcdmember.WithClusterDomain(opts.ClusterDomain),
		etcdmember.WithEtcdClients(etcdclient.NewPool()),
		etcdmember.WithGraces(opts.Graces),
		etcdmember.WithEtcdViews(views),
	}
	if !opts.ClusterScopedReads {
		clusterOpts = append(clusterOpts, etcdcluster.WithoutClusterScopedReads())
		memberOpts = append(memberOpts, etcdmember.WithoutClusterScopedReads())
	}
	return []controllerSetup{
		func(mgr ctrl.Manager) error {
			return etcdcluster.NewFromManager(mgr, etcdclient.NewPool(), clusterOpts...).SetupWithManager(mgr)
		},
		func(mgr ctrl.Manager) error { return etcdmember.SetupWithManager(mgr, memberOpts...) },
		func(mgr ctrl.Manager) error { return etcddefrag.SetupWithManager(mgr, etcdclient.NewPool()) },
		etcddefrag.SetupPolicyWithManager,
		// The snapshot Job runs the operator's own image, as the data-dir guard does.
		func(mgr ctrl.Manager) error { return etcdsnapshot.SetupSnapshotWithManager(mgr, opts.DataGuardImage) },
		etcdsnapshot.SetupScheduleWithManager,
	}
}
