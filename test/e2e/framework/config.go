package framework

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Environment variables that configure a run.
const (
	// EnvKubeconfig names the kubeconfig of the cluster under test; `make cluster-up` prints it.
	EnvKubeconfig = "E2E_KUBECONFIG"
	// EnvArtifacts is the folder for the timing report and failure dumps.
	EnvArtifacts = "E2E_ARTIFACTS"
	// EnvLabels is a comma-separated list of labels; a test runs only if it carries one of
	// them. Empty runs every test. `make e2e` sets "smoke".
	EnvLabels = "E2E_LABELS"
	// EnvKeepNamespaces keeps every test namespace, not only those of failed tests, when "1".
	EnvKeepNamespaces = "E2E_KEEP_NAMESPACES"
	// EnvOperatorDeployment names the operator Deployment when its namespace holds several.
	EnvOperatorDeployment = "E2E_OPERATOR_DEPLOYMENT"
	// EnvSetupMillis is how long `make e2e` spent bringing the cluster up (and deploying), in
	// milliseconds; the suite records it in the timing report as "cluster-up".
	EnvSetupMillis = "E2E_SETUP_MS"
	// EnvSetupNote describes what the setup ran, e.g. "make cluster-up".
	EnvSetupNote = "E2E_SETUP_NOTE"
	// EnvTimingMerge makes each test binary add its measures to the run's timing report
	// instead of replacing it, when "1". `make e2e` sets it after removing the old report, so
	// every e2e package of one run lands in one report.
	EnvTimingMerge = "E2E_TIMING_MERGE"
)

// SetupDuration returns the setup time passed in EnvSetupMillis, and false when it is absent
// or malformed (a run started with go test directly has none).
func SetupDuration(getenv func(string) string) (time.Duration, bool) {
	ms, err := strconv.ParseInt(getenv(EnvSetupMillis), 10, 64)
	if err != nil || ms < 0 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// OperatorNamespace is where `make deploy` installs the operator.
const OperatorNamespace = "etcd-operator-system"

// Label marks what a test exercises (TESTING.md, "e2e"); a run selects tests by label.
type Label string

// The labels tests use.
const (
	Smoke      Label = "smoke"
	Disruptive Label = "disruptive"
	Upgrade    Label = "upgrade"
	Security   Label = "security"
	Backup     Label = "backup"
	Migration  Label = "migration"
	// Tools marks tests that drive kubectl-etcd or etcd-migrate as a user would.
	Tools Label = "tools"
)

// ErrNoKubeconfig means no kubeconfig was configured or found.
var ErrNoKubeconfig = errors.New("no kubeconfig for the e2e cluster: set " + EnvKubeconfig + " to the path `make cluster-up` prints")

// KubeconfigPath returns the kubeconfig to use: $E2E_KUBECONFIG, else the first existing
// default (see DefaultKubeconfigPaths).
func KubeconfigPath(getenv func(string) string) (string, error) {
	if p := getenv(EnvKubeconfig); p != "" {
		return p, nil
	}
	for _, p := range DefaultKubeconfigPaths(getenv) {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", ErrNoKubeconfig
}

// DefaultKubeconfigPaths lists where the local cluster tool writes its kubeconfig, under the
// binary cache the Makefile exports as ETCD_OPERATOR_CACHE. The framework never falls back to
// ~/.kube/config: an e2e run must not touch whatever cluster a developer's default context
// points at.
func DefaultKubeconfigPaths(getenv func(string) string) []string {
	cache := getenv("ETCD_OPERATOR_CACHE")
	if cache == "" {
		base := getenv("XDG_CACHE_HOME")
		if base == "" {
			base = filepath.Join(getenv("HOME"), ".cache")
		}
		cache = filepath.Join(base, "etcd-operator")
	}
	return []string{filepath.Join(cache, "localcluster", "kubeconfig")}
}

// ArtifactsDir returns $E2E_ARTIFACTS, else artifacts/ at the repository root (found from dir
// by walking up to go.mod), else artifacts/ under dir.
func ArtifactsDir(getenv func(string) string, dir string) string {
	if p := getenv(EnvArtifacts); p != "" {
		return p
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "artifacts")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "artifacts")
		}
	}
}

// LabelFilter selects tests by label.
type LabelFilter []Label

// ParseLabelFilter parses a comma-separated list; blanks are ignored.
func ParseLabelFilter(s string) LabelFilter {
	var f LabelFilter
	for _, l := range strings.Split(s, ",") {
		if l = strings.TrimSpace(l); l != "" {
			f = append(f, Label(l))
		}
	}
	return f
}

// Match reports whether a test with these labels runs: an empty filter runs everything,
// otherwise the test needs at least one of the filter's labels.
func (f LabelFilter) Match(labels []Label) bool {
	if len(f) == 0 {
		return true
	}
	for _, l := range labels {
		if slices.Contains(f, l) {
			return true
		}
	}
	return false
}
