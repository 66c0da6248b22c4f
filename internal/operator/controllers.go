package operator

import ctrl "sigs.k8s.io/controller-runtime"

// controllerSetup registers one controller with the manager. It has the shape of kubebuilder's
// SetupWithManager, so a reconciler's method value can be listed directly.
type controllerSetup func(mgr ctrl.Manager) error

// controllers returns the setup of every controller the operator runs, in registration order.
//
// This is the one place where controllers are added. Each lives in its own package under
// internal/controller/ and receives what it needs from Options through its constructor (for example the
// etcd image repository and the cluster domain), so that the controller packages never import this
// one. Concurrency needs no wiring: managerOptions sets it for every controller.
//
// The list is empty until the EtcdCluster, EtcdMember and EtcdSnapshot controllers land; a manager
// without controllers still elects a leader and serves probes and metrics.
func controllers(_ Options) []controllerSetup {
	return nil
}
