package desired

import (
	"strconv"
	"strings"
)

// etcdVersion is a parsed etcd release number. Rendering depends on it because etcd renamed
// flags between minors (3.6 moved corruption checks behind --feature-gates, 3.7 removed the
// --experimental-* spellings) and added health endpoints in a patch release (3.5.11).
//
// It is deliberately private and minimal: version policy (which upgrades are allowed) belongs to
// the version package; this package only needs to compare against a handful of thresholds.
type etcdVersion struct {
	major, minor, patch int
}

// Version thresholds that change what a member Pod looks like. Each is checked against etcd's
// own sources; see docs/design/pod-template.md.
var (
	// v3_5_5 added --experimental-compact-hash-check-enabled.
	v3_5_5 = etcdVersion{3, 5, 5}
	// v3_5_11 added /livez and /readyz (on the metrics listener as well as the client one).
	v3_5_11 = etcdVersion{3, 5, 11}
	// v3_6_0 added --feature-gates and deprecated the --experimental-* corruption-check flags,
	// which 3.7 removed.
	v3_6_0 = etcdVersion{3, 6, 0}
)

// newestKnown is what an unparseable version renders as. The API rejects anything that is not
// MAJOR.MINOR.PATCH, so this is only reached by hand-built or fuzzed input; there the
// go-forward spelling is the least surprising choice, and the Pod cannot start anyway because its
// image tag is equally malformed.
var newestKnown = etcdVersion{3, 7, 0}

// parseVersion reads "MAJOR.MINOR.PATCH" with an optional leading "v". ok is false for anything
// else, including pre-release suffixes, which etcd images for members never carry.
func parseVersion(s string) (etcdVersion, bool) {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) != 3 {
		return etcdVersion{}, false
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || (p[0] == '+' || p[0] == '-') {
			return etcdVersion{}, false
		}
		nums[i] = n
	}
	return etcdVersion{nums[0], nums[1], nums[2]}, true
}

// versionOrNewest parses s, falling back to newestKnown.
func versionOrNewest(s string) etcdVersion {
	if v, ok := parseVersion(s); ok {
		return v
	}
	return newestKnown
}

// atLeast reports whether v >= o.
func (v etcdVersion) atLeast(o etcdVersion) bool {
	if v.major != o.major {
		return v.major > o.major
	}
	if v.minor != o.minor {
		return v.minor > o.minor
	}
	return v.patch >= o.patch
}
