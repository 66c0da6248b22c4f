package pinned

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// VersionsFile is the path of the pinned-versions file relative to the repository root.
const VersionsFile = "hack/versions.env"

// Keys read from VersionsFile.
const (
	keyKubernetes  = "KUBERNETES_VERSION"
	keyEnvtestEtcd = "ENVTEST_ETCD_VERSION"
	keyCoreDNS     = "COREDNS_VERSION"
	keyHelm        = "HELM_VERSION"
	keyPrometheus  = "PROMETHEUS_VERSION"
	// keyEtcdPrefix starts one key per supported etcd minor, such as ETCD_VERSION_3_6.
	keyEtcdPrefix = "ETCD_VERSION_"
)

// Versions are the pinned versions of everything this package builds, without a "v" prefix.
type Versions struct {
	// Kubernetes is the k8s.io/kubernetes release, such as 1.35.4.
	Kubernetes string
	// Etcd holds one pinned patch release per supported etcd minor, oldest minor first.
	Etcd []string
	// EnvtestEtcd is the etcd release that backs the envtest kube-apiserver.
	EnvtestEtcd string
	// CoreDNS is the CoreDNS release used by the local cluster.
	CoreDNS string
	// Helm is the release of the helm CLI that checks the chart (helm.sh/helm/v4).
	Helm string
	// Prometheus is the Prometheus release whose promtool tests the alerting rules, such as
	// 3.16.0 (its Go module's version is derived: PrometheusModuleVersion).
	Prometheus string
}

// ErrNoVersionsFile means no parent folder of the starting point holds VersionsFile.
var ErrNoVersionsFile = errors.New("no " + VersionsFile + " found in this folder or any parent")

var (
	keyPattern     = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	releasePattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	etcdKeyPattern = regexp.MustCompile(`^ETCD_VERSION_([0-9]+)_([0-9]+)$`)
)

// FindRepoRoot walks up from dir to the first folder that holds VersionsFile.
func FindRepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", dir, err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, VersionsFile)); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoVersionsFile
		}
		dir = parent
	}
}

// LoadVersions reads and validates VersionsFile under repoRoot.
func LoadVersions(repoRoot string) (Versions, error) {
	path := filepath.Join(repoRoot, VersionsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Versions{}, fmt.Errorf("reading pinned versions: %w", err)
	}
	kv, err := ParseEnv(data)
	if err != nil {
		return Versions{}, fmt.Errorf("parsing %s: %w", path, err)
	}
	v, err := VersionsFromEnv(kv)
	if err != nil {
		return Versions{}, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// ParseEnv parses the KEY=VALUE format of VersionsFile. It is deliberately strict (no quotes,
// no spaces around '=', no duplicate keys) because make includes the same file, and make would
// read a quoted value with its quotes.
func ParseEnv(data []byte) (map[string]string, error) {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("line %d: want KEY=VALUE, got %q", n, line)
		case !keyPattern.MatchString(key):
			return nil, fmt.Errorf("line %d: key %q must be upper case letters, digits and '_' with no spaces", n, key)
		case value == "" || strings.ContainsAny(value, " \t\"'"):
			return nil, fmt.Errorf("line %d: value of %s must be non-empty, without quotes or spaces", n, key)
		}
		if _, dup := kv[key]; dup {
			return nil, fmt.Errorf("line %d: %s is set twice", n, key)
		}
		kv[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	return kv, nil
}

// VersionsFromEnv picks and validates the versions this package builds from parsed KEY=VALUE
// pairs; other keys are ignored because the file also serves make.
func VersionsFromEnv(kv map[string]string) (Versions, error) {
	var v Versions
	for key, dst := range map[string]*string{
		keyKubernetes:  &v.Kubernetes,
		keyEnvtestEtcd: &v.EnvtestEtcd,
		keyCoreDNS:     &v.CoreDNS,
		keyHelm:        &v.Helm,
		keyPrometheus:  &v.Prometheus,
	} {
		value, ok := kv[key]
		if !ok {
			return Versions{}, fmt.Errorf("%s is not set", key)
		}
		if !releasePattern.MatchString(value) {
			return Versions{}, fmt.Errorf("%s=%s: want a release such as 1.2.3, without a v prefix", key, value)
		}
		*dst = value
	}
	for key, value := range kv {
		if !strings.HasPrefix(key, keyEtcdPrefix) {
			continue
		}
		m := etcdKeyPattern.FindStringSubmatch(key)
		if m == nil {
			return Versions{}, fmt.Errorf("%s: want ETCD_VERSION_<major>_<minor>", key)
		}
		if !releasePattern.MatchString(value) || !strings.HasPrefix(value, m[1]+"."+m[2]+".") {
			return Versions{}, fmt.Errorf("%s=%s: want a %s.%s.x release without a v prefix", key, value, m[1], m[2])
		}
		v.Etcd = append(v.Etcd, value)
	}
	if len(v.Etcd) == 0 {
		return Versions{}, fmt.Errorf("no %s<major>_<minor> key is set", keyEtcdPrefix)
	}
	sort.Slice(v.Etcd, func(i, j int) bool { return releaseLess(v.Etcd[i], v.Etcd[j]) })
	return v, nil
}

// releaseLess orders validated x.y.z releases numerically.
func releaseLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range pa {
		if len(pa[i]) != len(pb[i]) {
			return len(pa[i]) < len(pb[i])
		}
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}
