package operator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// LeaderElectionID is the name of the leader-election Lease (docs/api.md, "Objects and their
// names"). It must never change: a new operator version with another name would not see the old
// version's Lease during an upgrade, and two leaders would change etcd membership at the same time.
const LeaderElectionID = "aa20b3a9.etcd-operator.cozystack.io"

// inClusterNamespaceFile is where the kubelet mounts the Pod's namespace with its service account
// token.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// readyzCacheSyncWait bounds how long one /readyz request waits for the informer caches. It is well
// under the kubelet's default probe timeout (1 s): a probe that times out is reported without a
// reason, a quick "not synced" answer carries one.
const readyzCacheSyncWait = 500 * time.Millisecond

// The manager itself needs these permissions; controllers declare their own next to their code.
// Leader election reads, creates and renews one Lease (client-go's LeaseLock uses get, create and
// update only) in the operator's own namespace, so that right is a Role there, not a ClusterRole:
// cluster-wide Lease rights would let the operator rewrite kube-system's and kube-node-lease's
// Leases (docs/operator.md, "Permissions"). It records "became leader" Events through the core
// and the events.k8s.io APIs, there and, for the controllers, in the clusters' namespaces; the
// Role repeats the Event rights so that the namespace-scoped install, which has no ClusterRole,
// has them in the operator's namespace too.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=etcd-operator-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=etcd-operator-system
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch,namespace=etcd-operator-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Run runs the operator until ctx is cancelled, then stops it within opts.GracefulShutdownTimeout and
// releases the leader Lease. It logs with the logger in ctx. A nil error means a clean, requested
// stop; losing the leader Lease or failing to start returns an error, so that the process exits
// non-zero and Kubernetes restarts it.
func Run(ctx context.Context, opts Options) error {
	log := logf.FromContext(ctx)

	restConfig, err := loadRESTConfig(opts.Kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	leaseNamespace, err := leaderElectionNamespace(opts, os.ReadFile)
	if err != nil {
		return err
	}

	// The manager, its controllers and client-go's leader election (which logs with the logger in
	// the context the manager starts with) share one StopAwareLogger, so that a clean stop logs no
	// error.
	mgrLog := StopAwareLogger(log, ctx.Done())
	mgr, err := ctrl.NewManager(restConfig, managerOptions(opts, scheme, leaseNamespace, mgrLog))
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informer-caches", cachesSynced(mgr.GetCache())); err != nil {
		return fmt.Errorf("adding the readyz check: %w", err)
	}
	opts.DataGuardImage, err = guardImage(ctx, opts, os.LookupEnv, mgr.GetAPIReader())
	if err != nil {
		return err
	}
	if opts.DataGuardImage == "" {
		log.Info("Not running in a Pod and --" + FlagDataGuardImage + " is unset: PVC members run etcd without the data-dir guard")
	}
	for _, setup := range controllers(opts) {
		if err := setup(mgr); err != nil {
			return fmt.Errorf("setting up controllers: %w", err)
		}
	}

	logStart(log, opts, leaseNamespace)
	if err := mgr.Start(logr.NewContext(ctx, mgrLog)); err != nil {
		return fmt.Errorf("running the controller manager: %w", err)
	}
	log.Info("Stopped etcd-operator")
	return nil
}

// logStart records the configuration the operator starts with.
func logStart(log logr.Logger, opts Options, leaseNamespace string) {
	log.Info("Starting etcd-operator",
		"watchNamespaces", strings.Join(opts.WatchNamespaces, ","),
		"clusterScopedReads", opts.ClusterScopedReads,
		"etcdImageRepository", opts.EtcdImageRepository,
		"dataGuardImage", opts.DataGuardImage,
		"clusterDomain", opts.ClusterDomain,
		"maxConcurrentReconciles", opts.MaxConcurrentReconciles,
		"leaderElection", opts.LeaderElection,
		"leaseNamespace", leaseNamespace,
		"leaseName", LeaderElectionID,
		"healthProbeBindAddress", opts.HealthProbeBindAddress,
		"metricsBindAddress", opts.MetricsBindAddress,
	)
}

// NewScheme returns the scheme of every kind the operator reads or writes: the built-in Kubernetes
// kinds and the etcd-operator.cozystack.io API.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering the Kubernetes kinds: %w", err)
	}
	if err := etcdv1alpha2.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering the %s kinds: %w", etcdv1alpha2.GroupVersion, err)
	}
	return scheme, nil
}

// managerOptions maps Options onto the manager, which logs with log. It is separate from Run so that
// the mapping, which carries the safety-relevant settings (Lease name, release on cancel, watched
// namespaces), is checked by unit tests.
func managerOptions(opts Options, scheme *runtime.Scheme, leaseNamespace string, log logr.Logger) ctrl.Options {
	shutdownTimeout := opts.GracefulShutdownTimeout
	return ctrl.Options{
		Scheme: scheme,
		Logger: log,
		Cache:  cache.Options{DefaultNamespaces: namespaceConfigs(opts.WatchNamespaces)},
		Controller: config.Controller{
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		},
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: leaseNamespace,
		// Release the Lease on a clean stop, so that the next replica leads at once instead of after
		// the lease duration. Safe because Run returns, and the process exits, right after the
		// manager has stopped every controller.
		LeaderElectionReleaseOnCancel: true,
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		GracefulShutdownTimeout:       &shutdownTimeout,
	}
}

// namespaceConfigs restricts the caches to the watched namespaces; nil means every namespace.
func namespaceConfigs(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	configs := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		configs[ns] = cache.Config{}
	}
	return configs
}

// Reasons leaderElectionNamespace fails, for errors.Is.
var (
	errOutsideCluster      = errors.New("the operator is not running in a Pod")
	errInvalidPodNamespace = errors.New("the Pod's namespace file holds no valid namespace")
)

// leaderElectionNamespace returns the namespace of the leader Lease: the flag if set, else the Pod's
// own namespace. Controller-runtime would find the latter too, but its error outside a cluster does
// not say which flag to set.
func leaderElectionNamespace(opts Options, readFile func(string) ([]byte, error)) (string, error) {
	if !opts.LeaderElection || opts.LeaderElectionNamespace != "" {
		return opts.LeaderElectionNamespace, nil
	}
	data, err := readFile(inClusterNamespaceFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("cannot tell which namespace holds the leader-election Lease: %w (%s does not "+
			"exist); set --%s (or %s), or pass --%s=false", errOutsideCluster,
			inClusterNamespaceFile, FlagLeaderElectionNamespace, envName(FlagLeaderElectionNamespace), FlagLeaderElect)
	case err != nil:
		return "", fmt.Errorf("reading the operator's namespace for the leader-election Lease: %w", err)
	}
	ns := strings.TrimSpace(string(data))
	if err := validateNamespace(ns); err != nil {
		return "", fmt.Errorf("%w: %s: %w", errInvalidPodNamespace, inClusterNamespaceFile, err)
	}
	return ns, nil
}

// loadRESTConfig reads the kubeconfig file if one is named, and otherwise follows the client-go
// rules ($KUBECONFIG, in-cluster, ~/.kube/config).
func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --%s %s: %w", FlagKubeconfig, kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding the Kubernetes API server (set --%s or $KUBECONFIG when running "+
			"outside a cluster): %w", FlagKubeconfig, err)
	}
	return cfg, nil
}

// cachesSynced is the readiness check: the replica is ready once the informers the controllers asked
// for have synced. Before that its view of the cluster is partial, and a replica that never gets there
// (a CRD missing, RBAC denied) should show as not ready rather than as healthy and idle.
func cachesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), readyzCacheSyncWait)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced yet")
		}
		return nil
	}
}
