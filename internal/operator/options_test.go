package operator

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zapcore"

	"github.com/etcd-operator/etcd-operator/internal/health"
)

// mapEnv turns a map into a lookupEnv function, so that tests never touch the process environment
// and can run in parallel.
func mapEnv(env map[string]string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		v, ok := env[key]
		return v, ok
	}
}

func defaultOptions() Options {
	return Options{
		ClusterScopedReads:      true,
		EtcdImageRepository:     DefaultEtcdImageRepository,
		ClusterDomain:           DefaultClusterDomain,
		MaxConcurrentReconciles: DefaultMaxConcurrentReconciles,
		LeaderElection:          true,
		HealthProbeBindAddress:  DefaultHealthProbeBindAddress,
		MetricsBindAddress:      DefaultMetricsBindAddress,
		GracefulShutdownTimeout: DefaultGracefulShutdownTimeout,
		Graces:                  health.DefaultGraces(),
		OrphanMemberGrace:       time.Minute,
		Log:                     LogOptions{Level: zapcore.InfoLevel, Format: LogFormatJSON},
	}
}

func TestParseOptionsValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		modify func(*Options)
	}{
		{name: "defaults", modify: func(*Options) {}},
		{
			name: "every flag",
			args: []string{
				"--kubeconfig=/tmp/kc",
				"--watch-namespaces=team-a,team-b",
				"--cluster-scoped-reads=false",
				"--etcd-image-repository=registry.local:5000/mirror/etcd",
				"--cluster-domain=corp.example",
				"--max-concurrent-reconciles=10",
				"--leader-elect=false",
				"--leader-election-namespace=ops",
				"--health-probe-bind-address=127.0.0.1:9000",
				"--metrics-bind-address=0",
				"--graceful-shutdown-timeout=5s",
				"--member-failure-grace=90s",
				"--member-start-grace=10m",
				"--pending-grace=2m",
				"--node-lost-grace=1h",
				"--terminating-grace=30s",
				"--orphan-member-grace=5m",
				"--log-level=debug",
				"--log-format=console",
			},
			modify: func(o *Options) {
				o.Kubeconfig = "/tmp/kc"
				o.WatchNamespaces = []string{"team-a", "team-b"}
				o.ClusterScopedReads = false
				o.EtcdImageRepository = "registry.local:5000/mirror/etcd"
				o.ClusterDomain = "corp.example"
				o.MaxConcurrentReconciles = 10
				o.LeaderElection = false
				o.LeaderElectionNamespace = "ops"
				o.HealthProbeBindAddress = "127.0.0.1:9000"
				o.MetricsBindAddress = "0"
				o.GracefulShutdownTimeout = 5 * time.Second
				o.Graces = health.Graces{MemberFailure: 90 * time.Second, MemberStart: 10 * time.Minute,
					Pending: 2 * time.Minute, NodeLost: time.Hour, Terminating: 30 * time.Second}
				o.OrphanMemberGrace = 5 * time.Minute
				o.Log = LogOptions{Level: zapcore.DebugLevel, Format: LogFormatConsole}
			},
		},
		{
			name: "every environment variable",
			env: map[string]string{
				"ETCD_OPERATOR_WATCH_NAMESPACES":           "team-a",
				"ETCD_OPERATOR_CLUSTER_SCOPED_READS":       "false",
				"ETCD_OPERATOR_ETCD_IMAGE_REPOSITORY":      "gcr.io/etcd-development/etcd",
				"ETCD_OPERATOR_CLUSTER_DOMAIN":             "k8s.internal",
				"ETCD_OPERATOR_MAX_CONCURRENT_RECONCILES":  "2",
				"ETCD_OPERATOR_LEADER_ELECT":               "0",
				"ETCD_OPERATOR_LEADER_ELECTION_NAMESPACE":  "ops",
				"ETCD_OPERATOR_HEALTH_PROBE_BIND_ADDRESS":  ":9001",
				"ETCD_OPERATOR_METRICS_BIND_ADDRESS":       ":9002",
				"ETCD_OPERATOR_GRACEFUL_SHUTDOWN_TIMEOUT":  "1m",
				"ETCD_OPERATOR_MEMBER_FAILURE_GRACE":       "4m",
				"ETCD_OPERATOR_MEMBER_START_GRACE":         "6m",
				"ETCD_OPERATOR_PENDING_GRACE":              "7m",
				"ETCD_OPERATOR_NODE_LOST_GRACE":            "8m",
				"ETCD_OPERATOR_TERMINATING_GRACE":          "9m",
				"ETCD_OPERATOR_ORPHAN_MEMBER_GRACE":        " 2m ",
				"ETCD_OPERATOR_LOG_LEVEL":                  "error",
				"ETCD_OPERATOR_LOG_FORMAT":                 "CONSOLE",
				"ETCD_OPERATOR_KUBECONFIG":                 "/ignored: kubeconfig reads $KUBECONFIG through client-go",
				"ETCD_OPERATOR_UNRELATED_VARIABLE_IGNORED": "x",
			},
			modify: func(o *Options) {
				o.WatchNamespaces = []string{"team-a"}
				o.ClusterScopedReads = false
				o.EtcdImageRepository = "gcr.io/etcd-development/etcd"
				o.ClusterDomain = "k8s.internal"
				o.MaxConcurrentReconciles = 2
				o.LeaderElection = false
				o.LeaderElectionNamespace = "ops"
				o.HealthProbeBindAddress = ":9001"
				o.MetricsBindAddress = ":9002"
				o.GracefulShutdownTimeout = time.Minute
				o.Graces = health.Graces{MemberFailure: 4 * time.Minute, MemberStart: 6 * time.Minute,
					Pending: 7 * time.Minute, NodeLost: 8 * time.Minute, Terminating: 9 * time.Minute}
				o.OrphanMemberGrace = 2 * time.Minute
				o.Log = LogOptions{Level: zapcore.ErrorLevel, Format: LogFormatConsole}
			},
		},
		{
			name: "flag wins over environment",
			args: []string{"--max-concurrent-reconciles", "8", "--leader-elect"},
			env: map[string]string{
				"ETCD_OPERATOR_MAX_CONCURRENT_RECONCILES": "abc",
				"ETCD_OPERATOR_LEADER_ELECT":              "false",
			},
			modify: func(o *Options) { o.MaxConcurrentReconciles = 8 },
		},
		{
			name:   "empty environment value clears a list",
			env:    map[string]string{"ETCD_OPERATOR_WATCH_NAMESPACES": ""},
			modify: func(*Options) {},
		},
		{
			name:   "blanks around namespaces are trimmed",
			args:   []string{"-watch-namespaces= a ,b "},
			modify: func(o *Options) { o.WatchNamespaces = []string{"a", "b"} },
		},
		{
			name:   "a grace of exactly the minimum",
			args:   []string{"--pending-grace=1s"},
			modify: func(o *Options) { o.Graces.Pending = time.Second },
		},
		{
			name:   "log verbosity number",
			args:   []string{"--log-level=3"},
			modify: func(o *Options) { o.Log.Level = zapcore.Level(-3) },
		},
		{
			name:   "log verbosity zero is info",
			args:   []string{"--log-level=0"},
			modify: func(o *Options) { o.Log.Level = zapcore.InfoLevel },
		},
		{
			name:   "image repository with registry port and nested path",
			args:   []string{"--etcd-image-repository=localhost:5000/a/b__c/etcd-x.y"},
			modify: func(o *Options) { o.EtcdImageRepository = "localhost:5000/a/b__c/etcd-x.y" },
		},
		{
			name: "guard image with registry port, tag and digest",
			args: []string{"--data-guard-image=localhost:5000/op/etcd-operator:v1.2@sha256:" + strings.Repeat("ab", 32)},
			modify: func(o *Options) {
				o.DataGuardImage = "localhost:5000/op/etcd-operator:v1.2@sha256:" + strings.Repeat("ab", 32)
			},
		},
		{
			name:   "image repository without registry",
			args:   []string{"--etcd-image-repository=etcd"},
			modify: func(o *Options) { o.EtcdImageRepository = "etcd" },
		},
		{
			name: "both endpoints on port 0 pick their own free ports",
			args: []string{"--health-probe-bind-address=:0", "--metrics-bind-address=:0"},
			modify: func(o *Options) {
				o.HealthProbeBindAddress = ":0"
				o.MetricsBindAddress = ":0"
			},
		},
		{
			name: "both endpoints disabled",
			args: []string{"--health-probe-bind-address=0", "--metrics-bind-address=0"},
			modify: func(o *Options) {
				o.HealthProbeBindAddress = "0"
				o.MetricsBindAddress = "0"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := defaultOptions()
			tt.modify(&want)
			got, err := ParseOptions(tt.args, mapEnv(tt.env))
			if err != nil {
				t.Fatalf("ParseOptions() error = %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseOptions() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseOptionsInvalidValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantFlag   string
		wantSource Source
	}{
		{name: "concurrency zero", args: []string{"--max-concurrent-reconciles=0"}, wantFlag: FlagMaxConcurrentReconciles, wantSource: SourceFlag},
		{name: "concurrency negative", args: []string{"--max-concurrent-reconciles=-2"}, wantFlag: FlagMaxConcurrentReconciles, wantSource: SourceFlag},
		{name: "concurrency not a number", env: map[string]string{"ETCD_OPERATOR_MAX_CONCURRENT_RECONCILES": "abc"}, wantFlag: FlagMaxConcurrentReconciles, wantSource: SourceEnv},
		{name: "concurrency empty", env: map[string]string{"ETCD_OPERATOR_MAX_CONCURRENT_RECONCILES": ""}, wantFlag: FlagMaxConcurrentReconciles, wantSource: SourceEnv},
		{name: "namespace list with empty entry", args: []string{"--watch-namespaces=a,,b"}, wantFlag: FlagWatchNamespaces, wantSource: SourceFlag},
		{name: "namespace list with trailing comma", env: map[string]string{"ETCD_OPERATOR_WATCH_NAMESPACES": "a,"}, wantFlag: FlagWatchNamespaces, wantSource: SourceEnv},
		{name: "namespace list with duplicate", args: []string{"--watch-namespaces=a,b,a"}, wantFlag: FlagWatchNamespaces, wantSource: SourceFlag},
		{name: "namespace with upper case", args: []string{"--watch-namespaces=Team-A"}, wantFlag: FlagWatchNamespaces, wantSource: SourceFlag},
		{name: "namespace separated by semicolons", args: []string{"--watch-namespaces=a;b"}, wantFlag: FlagWatchNamespaces, wantSource: SourceFlag},
		{name: "namespace too long", args: []string{"--watch-namespaces=" + strings.Repeat("a", 64)}, wantFlag: FlagWatchNamespaces, wantSource: SourceFlag},
		{name: "image repository with tag", args: []string{"--etcd-image-repository=quay.io/coreos/etcd:v3.6.0"}, wantFlag: FlagEtcdImageRepository, wantSource: SourceFlag},
		{name: "image repository with registry port and tag", args: []string{"--etcd-image-repository=localhost:5000/etcd:3.6"}, wantFlag: FlagEtcdImageRepository, wantSource: SourceFlag},
		{name: "image repository with digest", env: map[string]string{"ETCD_OPERATOR_ETCD_IMAGE_REPOSITORY": "quay.io/coreos/etcd@sha256:" + strings.Repeat("0", 64)}, wantFlag: FlagEtcdImageRepository, wantSource: SourceEnv},
		{name: "image repository empty", args: []string{"--etcd-image-repository="}, wantFlag: FlagEtcdImageRepository, wantSource: SourceFlag},
		{name: "image repository upper-case path", args: []string{"--etcd-image-repository=quay.io/CoreOS/etcd"}, wantFlag: FlagEtcdImageRepository, wantSource: SourceFlag},
		{name: "image repository with scheme", args: []string{"--etcd-image-repository=https://quay.io/coreos/etcd"}, wantFlag: FlagEtcdImageRepository, wantSource: SourceFlag},
		{name: "image repository trailing slash", args: []string{"--etcd-image-repository=quay.io/coreos/"}, wantFlag: FlagEtcdImageRepository, wantSource: SourceFlag},
		{name: "guard image with scheme", args: []string{"--data-guard-image=https://ghcr.io/x/op:v1"}, wantFlag: FlagDataGuardImage, wantSource: SourceFlag},
		{name: "guard image bad tag", args: []string{"--data-guard-image=ghcr.io/x/op:-v1"}, wantFlag: FlagDataGuardImage, wantSource: SourceFlag},
		{name: "guard image bad digest", args: []string{"--data-guard-image=ghcr.io/x/op@sha256:xyz"}, wantFlag: FlagDataGuardImage, wantSource: SourceFlag},
		{name: "image repository too long", args: []string{"--etcd-image-repository=quay.io/" + strings.Repeat("a", 250)}, wantFlag: FlagEtcdImageRepository, wantSource: SourceFlag},
		{name: "cluster domain trailing dot", args: []string{"--cluster-domain=cluster.local."}, wantFlag: FlagClusterDomain, wantSource: SourceFlag},
		{name: "cluster domain underscore", env: map[string]string{"ETCD_OPERATOR_CLUSTER_DOMAIN": "cluster_local"}, wantFlag: FlagClusterDomain, wantSource: SourceEnv},
		{name: "cluster domain empty", args: []string{"--cluster-domain="}, wantFlag: FlagClusterDomain, wantSource: SourceFlag},
		{name: "leader elect not a bool", args: []string{"--leader-elect=maybe"}, wantFlag: FlagLeaderElect, wantSource: SourceFlag},
		{name: "leader elect env not a bool", env: map[string]string{"ETCD_OPERATOR_LEADER_ELECT": "yes"}, wantFlag: FlagLeaderElect, wantSource: SourceEnv},
		{name: "leader election namespace invalid", args: []string{"--leader-election-namespace=Ops"}, wantFlag: FlagLeaderElectionNamespace, wantSource: SourceFlag},
		{name: "probe address without port", args: []string{"--health-probe-bind-address=localhost"}, wantFlag: FlagHealthProbeBindAddress, wantSource: SourceFlag},
		{name: "probe address empty", args: []string{"--health-probe-bind-address="}, wantFlag: FlagHealthProbeBindAddress, wantSource: SourceFlag},
		{name: "metrics address bare port", env: map[string]string{"ETCD_OPERATOR_METRICS_BIND_ADDRESS": "8080"}, wantFlag: FlagMetricsBindAddress, wantSource: SourceEnv},
		{name: "metrics address named port", args: []string{"--metrics-bind-address=:http"}, wantFlag: FlagMetricsBindAddress, wantSource: SourceFlag},
		{name: "metrics address port out of range", args: []string{"--metrics-bind-address=:70000"}, wantFlag: FlagMetricsBindAddress, wantSource: SourceFlag},
		{name: "probe and metrics on one address", args: []string{"--health-probe-bind-address=:9000", "--metrics-bind-address=:9000"}, wantFlag: FlagHealthProbeBindAddress, wantSource: SourceFlag},
		{name: "metrics moved onto the default probe address", args: []string{"--metrics-bind-address=:8081"}, wantFlag: FlagMetricsBindAddress, wantSource: SourceFlag},
		{name: "probe and metrics on one address from env", env: map[string]string{"ETCD_OPERATOR_HEALTH_PROBE_BIND_ADDRESS": ":8080"}, wantFlag: FlagHealthProbeBindAddress, wantSource: SourceEnv},
		{name: "shutdown timeout zero", args: []string{"--graceful-shutdown-timeout=0s"}, wantFlag: FlagGracefulShutdownTimeout, wantSource: SourceFlag},
		{name: "shutdown timeout without unit", args: []string{"--graceful-shutdown-timeout=30"}, wantFlag: FlagGracefulShutdownTimeout, wantSource: SourceFlag},
		{name: "failure grace zero", args: []string{"--member-failure-grace=0s"}, wantFlag: FlagMemberFailureGrace, wantSource: SourceFlag},
		{name: "start grace negative", args: []string{"--member-start-grace=-5m"}, wantFlag: FlagMemberStartGrace, wantSource: SourceFlag},
		{name: "pending grace without unit", args: []string{"--pending-grace=300"}, wantFlag: FlagPendingGrace, wantSource: SourceFlag},
		{name: "node-lost grace in milliseconds", args: []string{"--node-lost-grace=5ms"}, wantFlag: FlagNodeLostGrace, wantSource: SourceFlag},
		{name: "terminating grace empty", env: map[string]string{"ETCD_OPERATOR_TERMINATING_GRACE": ""}, wantFlag: FlagTerminatingGrace, wantSource: SourceEnv},
		{name: "orphan grace not a duration", env: map[string]string{"ETCD_OPERATOR_ORPHAN_MEMBER_GRACE": "one minute"}, wantFlag: FlagOrphanMemberGrace, wantSource: SourceEnv},
		{name: "log level unknown name", args: []string{"--log-level=verbose"}, wantFlag: FlagLogLevel, wantSource: SourceFlag},
		{name: "log level warn is not offered", args: []string{"--log-level=warn"}, wantFlag: FlagLogLevel, wantSource: SourceFlag},
		{name: "log level negative", env: map[string]string{"ETCD_OPERATOR_LOG_LEVEL": "-1"}, wantFlag: FlagLogLevel, wantSource: SourceEnv},
		{name: "log level beyond zap range", args: []string{"--log-level=128"}, wantFlag: FlagLogLevel, wantSource: SourceFlag},
		{name: "log format unknown", args: []string{"--log-format=text"}, wantFlag: FlagLogFormat, wantSource: SourceFlag},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseOptions(tt.args, mapEnv(tt.env))
			var optErr *OptionError
			if !errors.As(err, &optErr) {
				t.Fatalf("ParseOptions() error = %v, want an *OptionError", err)
			}
			if optErr.Flag != tt.wantFlag || optErr.Source != tt.wantSource {
				t.Errorf("ParseOptions() rejected --%s from %s, want --%s from %s (error: %v)",
					optErr.Flag, optErr.Source, tt.wantFlag, tt.wantSource, err)
			}
			if optErr.Err == nil {
				t.Errorf("OptionError has no reason: %v", err)
			}
		})
	}
}

// TestOptionErrorMessage pins the wording users see, since it is part of the operator's interface:
// it must name what the user set (flag or environment variable) and how to fix it.
func TestOptionErrorMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{
			name: "from flag",
			args: []string{"--max-concurrent-reconciles=0"},
			want: `invalid value "0" for --max-concurrent-reconciles: must be at least 1, or no object would ` +
				`ever be reconciled; the default is 4`,
		},
		{
			name: "from environment",
			env:  map[string]string{"ETCD_OPERATOR_MAX_CONCURRENT_RECONCILES": "abc"},
			want: `invalid value "abc" for ETCD_OPERATOR_MAX_CONCURRENT_RECONCILES (--max-concurrent-reconciles): ` +
				`must be a whole number such as 4`,
		},
		{
			name: "grace",
			args: []string{"--node-lost-grace=5ms"},
			want: `invalid value "5ms" for --node-lost-grace: must be a duration of at least 1s, such as 5m0s (the default)`,
		},
		{
			name: "image tag",
			args: []string{"--etcd-image-repository=quay.io/coreos/etcd:v3.6.0"},
			want: `invalid value "quay.io/coreos/etcd:v3.6.0" for --etcd-image-repository: contains the tag ` +
				`"v3.6.0": give the repository only, e.g. quay.io/coreos/etcd; the operator adds the tag from ` +
				`each cluster's spec.version`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseOptions(tt.args, mapEnv(tt.env))
			if err == nil {
				t.Fatal("ParseOptions() error = nil")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error message mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseOptionsCommandLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want error
	}{
		{name: "unknown flag", args: []string{"--watch-namespace=a"}, want: ErrUsage},
		{name: "missing value", args: []string{"--log-level"}, want: ErrUsage},
		{name: "stray argument", args: []string{"run"}, want: ErrUsage},
		{name: "argument after flags", args: []string{"--log-level=info", "extra"}, want: ErrUsage},
		{name: "help", args: []string{"-h"}, want: flag.ErrHelp},
		{name: "long help", args: []string{"--help"}, want: flag.ErrHelp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseOptions(tt.args, mapEnv(nil))
			if !errors.Is(err, tt.want) {
				t.Errorf("ParseOptions() error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		FlagWatchNamespaces:         "ETCD_OPERATOR_WATCH_NAMESPACES",
		FlagMaxConcurrentReconciles: "ETCD_OPERATOR_MAX_CONCURRENT_RECONCILES",
		FlagLogLevel:                "ETCD_OPERATOR_LOG_LEVEL",
	}
	for flagName, want := range tests {
		if got := envName(flagName); got != want {
			t.Errorf("envName(%q) = %q, want %q", flagName, got, want)
		}
	}
}

// TestPrintUsage checks that --help documents every flag with its environment variable, so that
// the help text cannot fall behind the settings table.
func TestPrintUsage(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	PrintUsage(&buf)
	out := buf.String()
	for _, s := range settings() {
		if !strings.Contains(out, "-"+s.flag) {
			t.Errorf("usage does not mention -%s", s.flag)
		}
		if env := s.envVar(); env != "" && !strings.Contains(out, env) {
			t.Errorf("usage does not mention %s", env)
		}
	}
}

// TestDefaultsAreValid guards against a default that its own validation rejects, which would make
// the binary fail to start with no flags at all.
func TestDefaultsAreValid(t *testing.T) {
	t.Parallel()
	for _, s := range settings() {
		var o Options
		if err := s.apply(&o, s.def); err != nil {
			t.Errorf("default %q of --%s is invalid: %v", s.def, s.flag, err)
		}
	}
}
