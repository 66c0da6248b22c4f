package operator

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/util/validation"
)

// disabledAddress turns an endpoint off; it is controller-runtime's convention for both the probe and
// the metrics server.
const disabledAddress = "0"

// maxLogVerbosity is the highest number --log-level accepts: zap levels are int8, and logr's V(n) is
// zap level -n.
const maxLogVerbosity = 127

// imageRepositoryPattern is the repository part of an image reference (the distribution "name"
// grammar): an optional registry host with optional port, then lower-case path components.
var imageRepositoryPattern = regexp.MustCompile(`^` +
	`(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*` +
	`(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`$`)

// maxImageRepositoryLength is the registry limit on a repository name.
const maxImageRepositoryLength = 255

// parseNamespaces splits a comma-separated namespace list. Blanks around entries are tolerated because
// they are common in hand-written environment variables; empty entries and duplicates are not, because
// they usually mean a name went missing in an edit.
func parseNamespaces(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	namespaces := make([]string, 0, len(parts))
	seen := make(map[string]bool, len(parts))
	for i, part := range parts {
		ns := strings.TrimSpace(part)
		if ns == "" {
			return nil, fmt.Errorf("entry %d of the list is empty: remove the extra comma, or give an empty "+
				"value to watch all namespaces", i+1)
		}
		if err := validateNamespace(ns); err != nil {
			return nil, err
		}
		if seen[ns] {
			return nil, fmt.Errorf("namespace %q is listed twice: list each namespace once", ns)
		}
		seen[ns] = true
		namespaces = append(namespaces, ns)
	}
	return namespaces, nil
}

func validateNamespace(ns string) error {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid namespace name: %s", ns, strings.Join(msgs, "; "))
	}
	return nil
}

// validateImageRepository accepts a repository without tag or digest, because the operator appends
// ":v<spec.version>" itself; a tag given here would silently pin every cluster to one etcd version.
func validateImageRepository(v string) error {
	const fix = "give the repository only, e.g. " + DefaultEtcdImageRepository +
		"; the operator adds the tag from each cluster's spec.version"
	lastSegment := v[strings.LastIndex(v, "/")+1:]
	switch {
	case v == "":
		return errors.New("must not be empty; the default is " + DefaultEtcdImageRepository)
	case strings.Contains(v, "@"):
		return fmt.Errorf("contains the digest %q: %s", v[strings.Index(v, "@"):], fix)
	case strings.Contains(lastSegment, ":"):
		return fmt.Errorf("contains the tag %q: %s", lastSegment[strings.Index(lastSegment, ":")+1:], fix)
	case len(v) > maxImageRepositoryLength:
		return fmt.Errorf("is %d characters long; a repository name has at most %d", len(v), maxImageRepositoryLength)
	case !imageRepositoryPattern.MatchString(v):
		return errors.New("is not an image repository: use an optional registry host[:port]/ followed by " +
			"lower-case path components separated by '/', e.g. " + DefaultEtcdImageRepository)
	}
	return nil
}

// validateImageReference accepts a full image reference: a repository (validateImageRepository)
// with an optional :tag and an optional @digest.
func validateImageReference(v string) error {
	repo := v
	if at := strings.Index(repo, "@"); at >= 0 {
		if !imageDigestPattern.MatchString(repo[at+1:]) {
			return fmt.Errorf("the digest after @ must look like sha256:<64 hex digits>")
		}
		repo = repo[:at]
	}
	if colon := strings.LastIndex(repo, ":"); colon > strings.LastIndex(repo, "/") {
		if !imageTagPattern.MatchString(repo[colon+1:]) {
			return fmt.Errorf("the tag after : must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'")
		}
		repo = repo[:colon]
	}
	if len(repo) > maxImageRepositoryLength || !imageRepositoryPattern.MatchString(repo) {
		return errors.New("is not an image reference: use [registry[:port]/]path[:tag][@sha256:digest] with a " +
			"lower-case path, e.g. ghcr.io/example/etcd-operator:v1.0.0")
	}
	return nil
}

var (
	imageTagPattern    = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}$`)
	imageDigestPattern = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-fA-F0-9]{32,}$`)
)

func validateClusterDomain(v string) error {
	if strings.HasSuffix(v, ".") {
		return errors.New("must not end with a dot: write it as Kubernetes DNS does, e.g. " + DefaultClusterDomain)
	}
	if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
		return fmt.Errorf("is not a DNS domain such as %s: %s", DefaultClusterDomain, strings.Join(msgs, "; "))
	}
	return nil
}

func parseConcurrency(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("must be a whole number such as %d", DefaultMaxConcurrentReconciles)
	}
	if n < 1 {
		return 0, fmt.Errorf("must be at least 1, or no object would ever be reconciled; the default is %d",
			DefaultMaxConcurrentReconciles)
	}
	return n, nil
}

func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, errors.New("must be true or false")
	}
	return b, nil
}

// validateBindAddress accepts host:port (host may be empty for all interfaces) or "0" to disable.
func validateBindAddress(v string) error {
	if v == disabledAddress {
		return nil
	}
	const want = "must be host:port such as :8080 or 127.0.0.1:8080, or 0 to disable the endpoint"
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return errors.New(want)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535: %s", port, want)
	}
	return nil
}

func parsePositiveDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("must be a positive duration such as %s", DefaultGracefulShutdownTimeout)
	}
	return d, nil
}

// minGrace is the shortest grace accepted. A grace is minutes by design; anything below a second
// is a unit typed wrong ("3ms" for "3m"), and would turn every blip of a member into a failure,
// or a replacement.
const minGrace = time.Second

// parseGrace reads a grace flag: a Go duration of at least minGrace.
func parseGrace(v string, def time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < minGrace {
		return 0, fmt.Errorf("must be a duration of at least %s, such as %s (the default)", minGrace, def)
	}
	return d, nil
}

// parseLogLevel maps a level name or a logr verbosity onto a zap level. logr's V(n) is zap level -n,
// so "debug" is verbosity 1 and each higher number adds more detail.
func parseLogLevel(v string) (zapcore.Level, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > maxLogVerbosity {
		return 0, fmt.Errorf("must be debug, info, error, or a verbosity from 0 (info) to %d", maxLogVerbosity)
	}
	return zapcore.Level(-n), nil
}

func parseLogFormat(v string) (LogFormat, error) {
	switch f := LogFormat(strings.ToLower(strings.TrimSpace(v))); f {
	case LogFormatJSON, LogFormatConsole:
		return f, nil
	}
	return "", fmt.Errorf("must be %s or %s", LogFormatJSON, LogFormatConsole)
}
