package operator

import (
	"fmt"
	"slices"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// settings lists every setting in the order --help shows them.
func settings() []setting {
	return slices.Concat(clientSettings(), imageSettings(), runtimeSettings(), endpointSettings(), graceSettings(), logSettings())
}

// clientSettings are the settings of the API server and of what the operator reads there.
func clientSettings() []setting {
	return []setting{
		{
			flag:  FlagKubeconfig,
			noEnv: true, // client-go already reads $KUBECONFIG (a list of files) when the flag is empty.
			usage: "The `path` of a kubeconfig file. Empty means $KUBECONFIG, then the in-cluster service " +
				"account, then ~/.kube/config.",
			apply: func(o *Options, v string) error { o.Kubeconfig = v; return nil },
		},
		{
			flag: FlagWatchNamespaces,
			usage: "Comma-separated `namespaces` whose etcd clusters this operator manages. " +
				"Empty means all namespaces.",
			apply: func(o *Options, v string) error {
				namespaces, err := parseNamespaces(v)
				o.WatchNamespaces = namespaces
				return err
			},
		},
		{
			flag:   FlagClusterScopedReads,
			def:    "true",
			isBool: true,
			usage: "Read Nodes, PersistentVolumes and StorageClasses (node-loss detection, storage growth). " +
				"Turn off for the namespace-scoped install, whose Roles cannot grant them.",
			apply: func(o *Options, v string) error {
				b, err := parseBool(v)
				o.ClusterScopedReads = b
				return err
			},
		},
	}
}

// imageSettings are the settings of the images member Pods run and of the names in their certificates.
func imageSettings() []setting {
	return []setting{
		{
			flag:  FlagEtcdImageRepository,
			def:   DefaultEtcdImageRepository,
			usage: "Image `repository` of etcd member Pods, without tag or digest; the tag is the cluster's version.",
			apply: func(o *Options, v string) error {
				o.EtcdImageRepository = v
				return validateImageRepository(v)
			},
		},
		{
			flag: FlagDataGuardImage,
			usage: "The `image` whose /etcd-guard runs etcd in PVC members' Pods and refuses to start it on a " +
				"data dir that lost its data. Empty means the operator's own image, read from its Pod (env " +
				PodNameEnv + " and " + PodNamespaceEnv + "); outside a Pod, members run without the guard.",
			apply: func(o *Options, v string) error {
				o.DataGuardImage = v
				if v == "" {
					return nil
				}
				return validateImageReference(v)
			},
		},
		{
			flag:  FlagClusterDomain,
			def:   DefaultClusterDomain,
			usage: "DNS `domain` of the Kubernetes cluster, added to the names in member certificates.",
			apply: func(o *Options, v string) error {
				o.ClusterDomain = v
				return validateClusterDomain(v)
			},
		},
	}
}

// runtimeSettings are the settings of how the operator process runs: concurrency and leader election.
func runtimeSettings() []setting {
	return []setting{
		{
			flag:  FlagMaxConcurrentReconciles,
			def:   fmt.Sprint(DefaultMaxConcurrentReconciles),
			usage: "How many objects each controller reconciles in parallel (a `number`, at least 1).",
			apply: func(o *Options, v string) error {
				n, err := parseConcurrency(v)
				o.MaxConcurrentReconciles = n
				return err
			},
		},
		{
			flag:   FlagLeaderElect,
			def:    "true",
			isBool: true,
			usage: "Elect one active replica through a Lease, so that only one process changes etcd " +
				"membership. Turn off only when exactly one replica can ever run.",
			apply: func(o *Options, v string) error {
				b, err := parseBool(v)
				o.LeaderElection = b
				return err
			},
		},
		{
			flag: FlagLeaderElectionNamespace,
			usage: "The `namespace` of the leader-election Lease " + LeaderElectionID + ". Empty means the " +
				"namespace of the operator's Pod; required when running outside a cluster.",
			apply: func(o *Options, v string) error {
				o.LeaderElectionNamespace = v
				if v == "" {
					return nil
				}
				return validateNamespace(v)
			},
		},
	}
}

// endpointSettings are the settings of the endpoints the process serves and of its shutdown.
func endpointSettings() []setting {
	return []setting{
		{
			flag:  FlagHealthProbeBindAddress,
			def:   DefaultHealthProbeBindAddress,
			usage: "The `host:port` of the /healthz and /readyz endpoint; 0 disables it.",
			apply: func(o *Options, v string) error {
				o.HealthProbeBindAddress = v
				return validateBindAddress(v)
			},
		},
		{
			flag:  FlagMetricsBindAddress,
			def:   DefaultMetricsBindAddress,
			usage: "The `host:port` of the Prometheus /metrics endpoint (plain HTTP); 0 disables it.",
			apply: func(o *Options, v string) error {
				o.MetricsBindAddress = v
				return validateBindAddress(v)
			},
		},
		{
			flag: FlagGracefulShutdownTimeout,
			def:  DefaultGracefulShutdownTimeout.String(),
			usage: "How long (a `duration`) to wait for controllers to finish and the Lease to be released after " +
				"SIGTERM; keep it below the Pod's terminationGracePeriodSeconds.",
			apply: func(o *Options, v string) error {
				d, err := parsePositiveDuration(v)
				o.GracefulShutdownTimeout = d
				return err
			},
		},
	}
}

// graceSettings are the settings of the graces of the health classification and the orphan grace.
func graceSettings() []setting {
	return []setting{
		graceSetting(FlagMemberFailureGrace, health.DefaultMemberFailureGrace,
			"a member that was Ready may stay not Ready before it is Healthy=False/CrashLoop",
			func(o *Options, d time.Duration) { o.Graces.MemberFailure = d }),
		graceSetting(FlagMemberStartGrace, health.DefaultMemberStartGrace,
			"a member's Pod with a new template may take to become Ready before the member is Healthy=False/StartFailed",
			func(o *Options, d time.Duration) { o.Graces.MemberStart = d }),
		graceSetting(FlagPendingGrace, health.DefaultPendingGrace,
			"a member's Pod may stay unschedulable before the member is Healthy=False/Unschedulable",
			func(o *Options, d time.Duration) { o.Graces.Pending = d }),
		graceSetting(FlagNodeLostGrace, health.DefaultNodeLostGrace,
			"the Node a Pending member's volume is pinned to may stay NotReady before the member is Healthy=False/NodeLost",
			func(o *Options, d time.Duration) { o.Graces.NodeLost = d }),
		graceSetting(FlagTerminatingGrace, health.DefaultTerminatingGrace,
			"a member's Pod may stay terminating on a NotReady Node past its own grace period before the member is "+
				"Healthy=False/NodeLost",
			func(o *Options, d time.Duration) { o.Graces.Terminating = d }),
		graceSetting(FlagOrphanMemberGrace, membership.DefaultOrphanMemberGrace,
			"an etcd member that no EtcdMember explains is left alone before it is removed from etcd",
			func(o *Options, d time.Duration) { o.OrphanMemberGrace = d }),
	}
}

// logSettings are the settings of logging.
func logSettings() []setting {
	return []setting{
		{
			flag:  FlagLogLevel,
			def:   "info",
			usage: "Lowest `level` logged: debug, info, error, or a verbosity number (0 = info, 1 = debug, higher = more).",
			apply: func(o *Options, v string) error {
				l, err := parseLogLevel(v)
				o.Log.Level = l
				return err
			},
		},
		{
			flag:  FlagLogFormat,
			def:   string(LogFormatJSON),
			usage: "Log `format`: json (one object per line) or console (for terminals).",
			apply: func(o *Options, v string) error {
				f, err := parseLogFormat(v)
				o.Log.Format = f
				return err
			},
		},
	}
}

// graceSetting is one grace flag: the same shape and validation for each, so that the six read
// alike in --help and docs/operator.md.
func graceSetting(name string, def time.Duration, what string, set func(*Options, time.Duration)) setting {
	return setting{
		flag:  name,
		def:   def.String(),
		usage: "How long (a `duration`) " + what + ".",
		apply: func(o *Options, v string) error {
			d, err := parseGrace(v, def)
			set(o, d)
			return err
		},
	}
}
