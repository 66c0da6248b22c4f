package version

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Version is an etcd release number. etcd member images carry no pre-release or build suffix,
// so none is accepted.
type Version struct {
	Major, Minor, Patch int
}

// ErrMalformed is returned by Parse for anything that is not MAJOR.MINOR.PATCH.
var ErrMalformed = errors.New("not a MAJOR.MINOR.PATCH etcd version")

// Parse reads "MAJOR.MINOR.PATCH", with an optional leading "v" (etcd's Status RPC answers
// without one, image tags carry one).
func Parse(s string) (Version, error) {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("parsing %q: %w", s, ErrMalformed)
	}
	var n [3]int
	for i, p := range parts {
		// Atoi accepts signs; a version component is digits only.
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return Version{}, fmt.Errorf("parsing %q: %w", s, ErrMalformed)
		}
		v, err := strconv.Atoi(p)
		if err != nil {
			return Version{}, fmt.Errorf("parsing %q: %w", s, ErrMalformed)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// String renders v as MAJOR.MINOR.PATCH.
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// MinorString renders v's minor line as MAJOR.MINOR.
func (v Version) MinorString() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Compare orders versions numerically: negative when v < o, zero when equal, positive when
// v > o.
func (v Version) Compare(o Version) int {
	if c := v.Major - o.Major; c != 0 {
		return c
	}
	if c := v.Minor - o.Minor; c != 0 {
		return c
	}
	return v.Patch - o.Patch
}

// Oldest is the oldest version the operator runs: restore tooling (etcdutl) and the probes
// (/livez, /readyz) it renders assume 3.5. The CRD refuses older versions at admission
// (docs/api.md, rule 26); TestVersionRuleMatchesOldest in api/v1alpha2 fails until the CEL rule,
// its message and the field description are changed with it.
var Oldest = Version{3, 5, 0}

// supported holds the newest patch of each supported minor, oldest minor first. It must match
// the ETCD_VERSION_<major>_<minor> pins of hack/versions.env (a test checks it): those are the
// releases the integration and e2e suites run, so they are what the operator recommends.
var supported = []Version{{3, 5, 35}, {3, 6, 16}, {3, 7, 3}}

// Supported returns the newest supported patch of each supported minor, oldest minor first.
func Supported() []Version { return slices.Clone(supported) }

// newest returns the newest supported patch of major.minor.
func newest(major, minor int) (Version, bool) {
	i := slices.IndexFunc(supported, func(v Version) bool { return v.Major == major && v.Minor == minor })
	if i < 0 {
		return Version{}, false
	}
	return supported[i], true
}

// minimumBeforeStep is, per minor, the patch every member of that minor must run before the
// cluster steps to the next minor, as etcd's upgrade guide for that step says. A minor without
// an entry has no such requirement. The figures follow the guides at the time of this release
// and are raised when the guides raise them.
var minimumBeforeStep = map[[2]int]Version{
	// 3.5 → 3.6: https://etcd.io/docs/v3.6/upgrades/upgrade_3_6/ ("Update 3.5"): "make sure that
	// all of your 3.5 members are updated to 3.5.32 or later". The guide asked for 3.5.20 (the
	// "too many learner member" upgrade failure, etcd-io/etcd#19557), then 3.5.26 (zombie
	// members, etcd-io/etcd#20793), and since etcd-io/website#1203 3.5.32 (which adds
	// --v2-deprecation=write-only-skip-check and a WAL-aware `etcdutl check v2store`).
	{3, 5}: {3, 5, 32},
	// 3.6 → 3.7: https://etcd.io/docs/v3.7/upgrades/upgrade_3_7/ ("Update 3.6"): "make sure that
	// all of your 3.6 members are updated to 3.6.11 or later. Earlier 3.6 patch releases may not
	// be compatible with a rolling upgrade to 3.7."
	{3, 6}: {3, 6, 11},
}

// MinimumBeforeStep returns the patch every member on v's minor must run before the cluster may
// move to the next minor, and false when etcd's guide names none.
func MinimumBeforeStep(v Version) (Version, bool) {
	m, ok := minimumBeforeStep[[2]int{v.Major, v.Minor}]
	return m, ok
}

// DefaultSnapshotCount is etcd's default --snapshot-count on v's minor: 100,000 up to 3.5, and
// 10,000 from 3.6 on.
func DefaultSnapshotCount(v Version) int64 {
	if v.Major == 3 && v.Minor <= 5 {
		return 100_000
	}
	return 10_000
}

// Lowest returns the lowest of versions that parse, and false when none does: the version a
// cluster counts as running while its members disagree (during a roll, the old one).
func Lowest(versions []string) (Version, bool) {
	var low Version
	found := false
	for _, s := range versions {
		if v, err := Parse(s); err == nil && (!found || v.Compare(low) < 0) {
			low, found = v, true
		}
	}
	return low, found
}
