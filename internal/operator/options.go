package operator

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/etcd-operator/etcd-operator/internal/health"
)

// EnvPrefix starts the name of every environment variable the operator reads. The rest of the name
// is the flag name in upper case with dashes turned into underscores, so that
// --max-concurrent-reconciles is ETCD_OPERATOR_MAX_CONCURRENT_RECONCILES: one rule, nothing to look up.
const EnvPrefix = "ETCD_OPERATOR_"

// Flag names. They are the public interface of the binary (Helm chart, docs/operator.md), so they are
// named once here and referred to everywhere else.
const (
	FlagKubeconfig              = "kubeconfig"
	FlagWatchNamespaces         = "watch-namespaces"
	FlagClusterScopedReads      = "cluster-scoped-reads"
	FlagEtcdImageRepository     = "etcd-image-repository"
	FlagDataGuardImage          = "data-guard-image"
	FlagClusterDomain           = "cluster-domain"
	FlagMaxConcurrentReconciles = "max-concurrent-reconciles"
	FlagLeaderElect             = "leader-elect"
	FlagLeaderElectionNamespace = "leader-election-namespace"
	FlagHealthProbeBindAddress  = "health-probe-bind-address"
	FlagMetricsBindAddress      = "metrics-bind-address"
	FlagGracefulShutdownTimeout = "graceful-shutdown-timeout"
	FlagLogLevel                = "log-level"
	FlagLogFormat               = "log-format"
	FlagMemberFailureGrace      = "member-failure-grace"
	FlagMemberStartGrace        = "member-start-grace"
	FlagPendingGrace            = "pending-grace"
	FlagNodeLostGrace           = "node-lost-grace"
	FlagTerminatingGrace        = "terminating-grace"
	FlagOrphanMemberGrace       = "orphan-member-grace"
)

// Defaults of the settings whose default is not the zero value.
const (
	DefaultEtcdImageRepository     = "quay.io/coreos/etcd"
	DefaultClusterDomain           = "cluster.local"
	DefaultMaxConcurrentReconciles = 4
	DefaultHealthProbeBindAddress  = ":8081"
	DefaultMetricsBindAddress      = ":8080"

	// DefaultGracefulShutdownTimeout is shorter than the Pod's default terminationGracePeriodSeconds
	// (30 s), so that runnables have stopped and the leader Lease has been released before the kubelet
	// sends SIGKILL; a released Lease lets the next replica lead at once instead of after the lease
	// duration.
	DefaultGracefulShutdownTimeout = 20 * time.Second
)

// Options is the validated configuration of one operator process.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file. Empty means the client-go rules: $KUBECONFIG, then
	// the in-cluster service account, then ~/.kube/config.
	Kubeconfig string
	// WatchNamespaces limits the informer caches, and so the clusters the operator manages, to these
	// namespaces. Empty means every namespace.
	WatchNamespaces []string
	// ClusterScopedReads lets the controllers read the cluster-scoped objects they use: Nodes and
	// PersistentVolumes (node-loss classification) and StorageClasses (storage growth). False is
	// for the namespace-scoped install, whose Roles cannot grant them; those features then work
	// without them as docs/operator.md, "Namespace-scoped install", says.
	ClusterScopedReads bool
	// EtcdImageRepository is the image repository, without tag or digest, of etcd member Pods; the tag
	// comes from each cluster's spec.version.
	EtcdImageRepository string
	// DataGuardImage is the image whose /etcd-guard runs etcd in PVC members' Pods (the operator's
	// own image). Empty means: find the operator's own image at start (guardImage).
	DataGuardImage string
	// ClusterDomain is the Kubernetes DNS domain, used for the fully qualified names put into member
	// certificates next to the short ones.
	ClusterDomain string
	// MaxConcurrentReconciles is the number of workers of each controller.
	MaxConcurrentReconciles int
	// LeaderElection makes replicas elect one leader that runs the controllers, so that only one
	// process ever changes etcd membership.
	LeaderElection bool
	// LeaderElectionNamespace holds the leader-election Lease. Empty means the namespace of the Pod the
	// operator runs in.
	LeaderElectionNamespace string
	// HealthProbeBindAddress serves /healthz and /readyz; "0" disables it.
	HealthProbeBindAddress string
	// MetricsBindAddress serves Prometheus metrics over plain HTTP at /metrics; "0" disables it.
	MetricsBindAddress string
	// GracefulShutdownTimeout bounds how long the manager waits for its runnables after a stop signal.
	GracefulShutdownTimeout time.Duration
	// Graces are how long each member failure may last before the member's Healthy condition turns
	// False (docs/design/timings.md, "Graces"); the EtcdMember controller classifies with them.
	Graces health.Graces
	// OrphanMemberGrace is how long the EtcdCluster controller leaves an etcd member that no
	// EtcdMember explains before it removes it.
	OrphanMemberGrace time.Duration
	// Log configures the process logger.
	Log LogOptions
}

// LogOptions configures the process logger.
type LogOptions struct {
	// Level is the lowest zap level written. logr's V(n) is zap level -n, so verbosity n is -n here.
	Level zapcore.Level
	// Format is how each record is encoded.
	Format LogFormat
}

// LogFormat is the encoding of log records.
type LogFormat string

// Log formats.
const (
	// LogFormatJSON writes one JSON object per line; it is the default because log pipelines parse it.
	LogFormatJSON LogFormat = "json"
	// LogFormatConsole writes tab-separated text for people reading a terminal.
	LogFormatConsole LogFormat = "console"
)

// Source tells where a setting's value came from.
type Source string

// Sources of a setting's value, in increasing precedence.
const (
	SourceDefault Source = "default"
	SourceEnv     Source = "environment"
	SourceFlag    Source = "flag"
)

// OptionError reports a flag or environment value that the operator cannot use. Its message names
// what the user set (the flag, or the environment variable and its flag) and what a valid value looks
// like, because the person reading it is usually editing a Deployment or a values file and needs to
// know which line to change.
type OptionError struct {
	// Flag is the flag name without dashes.
	Flag string
	// EnvVar is the environment variable read for the flag, or empty if the flag has none.
	EnvVar string
	// Source is where Value came from.
	Source Source
	// Value is the rejected value.
	Value string
	// Err says why the value is invalid and how to fix it.
	Err error
}

// Error implements error. It names what the user actually set: the environment variable when the
// value came from there, the flag otherwise.
func (e *OptionError) Error() string {
	if e.Source == SourceEnv {
		return fmt.Sprintf("invalid value %q for %s (--%s): %v", e.Value, e.EnvVar, e.Flag, e.Err)
	}
	return fmt.Sprintf("invalid value %q for --%s: %v", e.Value, e.Flag, e.Err)
}

// Unwrap returns the reason, so that callers can use errors.Is on it.
func (e *OptionError) Unwrap() error { return e.Err }

// ErrUsage marks errors in the shape of the command line itself (an unknown flag, a missing value, a
// stray argument), as opposed to a value that was understood but is invalid.
var ErrUsage = errors.New("invalid command line")

// setting is one operator setting: a flag, the environment variable that can also set it, its default
// and the function that validates a raw value into Options. Keeping the four together is what makes
// the env names, the --help text and docs/operator.md agree.
type setting struct {
	flag string
	// env is derived from flag by envName unless noEnv is set.
	noEnv  bool
	def    string
	usage  string
	isBool bool
	apply  func(o *Options, value string) error
}

func (s setting) envVar() string {
	if s.noEnv {
		return ""
	}
	return envName(s.flag)
}

// envName derives the environment variable of a flag.
func envName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// rawValue is a flag.Value that only records what it was given; validation happens afterwards in one
// place, so that a value is checked the same way whether it came from a flag or the environment.
type rawValue struct {
	value  string
	isBool bool
}

func (r *rawValue) String() string { return r.value }

func (r *rawValue) Set(v string) error { r.value = v; return nil }

// IsBoolFlag lets boolean settings be given as a bare --flag, as users of the flag package expect.
func (r *rawValue) IsBoolFlag() bool { return r.isBool }

// ParseOptions builds Options from command-line arguments (without the program name) and the
// environment, read through lookupEnv (os.LookupEnv in production, a map in tests). A flag wins over
// its environment variable, which wins over the default. It returns flag.ErrHelp for -h/--help, an
// error wrapping ErrUsage for a malformed command line, and an *OptionError for an invalid value.
func ParseOptions(args []string, lookupEnv func(string) (string, bool)) (Options, error) {
	all := settings()
	values := make(map[string]*rawValue, len(all))
	fs := newFlagSet(all, values)
	// The flag package prints its own errors and usage; the caller prints ours, once.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Options{}, err
		}
		return Options{}, fmt.Errorf("%w: %w; run etcd-operator --help to list the flags", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("%w: unexpected argument %q: etcd-operator takes flags only", ErrUsage, fs.Arg(0))
	}

	fromFlags := make(map[string]bool, len(all))
	fs.Visit(func(f *flag.Flag) { fromFlags[f.Name] = true })

	var opts Options
	sources := make(map[string]Source, len(all))
	for _, s := range all {
		value, source := s.def, SourceDefault
		switch {
		case fromFlags[s.flag]:
			value, source = values[s.flag].value, SourceFlag
		case s.envVar() != "":
			if v, ok := lookupEnv(s.envVar()); ok {
				value, source = v, SourceEnv
			}
		}
		sources[s.flag] = source
		if err := s.apply(&opts, value); err != nil {
			return Options{}, &OptionError{Flag: s.flag, EnvVar: s.envVar(), Source: source, Value: value, Err: err}
		}
	}
	if err := validateAddressesDiffer(opts, sources); err != nil {
		return Options{}, err
	}
	return opts, nil
}

// validateAddressesDiffer catches the one cross-setting mistake that would otherwise surface as a
// bare "address already in use" after the manager has started. It blames the setting the user gave,
// not the one left at its default.
func validateAddressesDiffer(o Options, sources map[string]Source) error {
	addr := o.HealthProbeBindAddress
	if addr == disabledAddress || addr != o.MetricsBindAddress {
		return nil
	}
	if port := addr[strings.LastIndex(addr, ":")+1:]; port == "0" {
		return nil // port 0 picks a free port for each listener
	}
	blamed, other := FlagHealthProbeBindAddress, FlagMetricsBindAddress
	if sources[blamed] == SourceDefault {
		blamed, other = other, blamed
	}
	return &OptionError{
		Flag:   blamed,
		EnvVar: envName(blamed),
		Source: sources[blamed],
		Value:  addr,
		Err:    fmt.Errorf("--%s has the same address; give each endpoint its own port", other),
	}
}

func newFlagSet(all []setting, values map[string]*rawValue) *flag.FlagSet {
	fs := flag.NewFlagSet("etcd-operator", flag.ContinueOnError)
	for _, s := range all {
		v := &rawValue{value: s.def, isBool: s.isBool}
		values[s.flag] = v
		usage := s.usage
		if env := s.envVar(); env != "" {
			usage += " Env: " + env + "."
		}
		fs.Var(v, s.flag, usage)
	}
	return fs
}

// PrintUsage writes the --help text: every flag with its environment variable and default.
func PrintUsage(w io.Writer) {
	fs := newFlagSet(settings(), map[string]*rawValue{})
	fs.SetOutput(w)
	_, _ = fmt.Fprintf(w, "Usage: etcd-operator [flags]\n\n"+
		"Runs the etcd-operator controllers. Every flag can also be set through the environment variable\n"+
		"named after it (%s plus the flag name in upper case, dashes as underscores); a flag wins over\n"+
		"its environment variable.\n\nFlags:\n", EnvPrefix)
	fs.PrintDefaults()
}
