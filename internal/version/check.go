package version

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The rules of docs/design/versions.md. A refusal wraps exactly one of them, so callers and tests
// tell them apart with errors.Is.
var (
	// ErrTooOld: the target is older than Oldest.
	ErrTooOld = errors.New("older than the oldest supported version")
	// ErrMajorChange: the target's major differs from a running member's.
	ErrMajorChange = errors.New("major version change")
	// ErrMinorDowngrade: the target's minor is below the highest running minor. etcd cannot
	// take a member back to an older minor in place once the cluster version moved (minor
	// downgrades need etcd's downgrade API, which is out of scope).
	ErrMinorDowngrade = errors.New("minor downgrade")
	// ErrMinorSkip: the target's minor is more than one above the lowest running minor. etcd
	// supports upgrading one minor at a time only; a mixed cluster may span one minor step.
	ErrMinorSkip = errors.New("minor skip")
	// ErrPatchTooOld: the target is the next minor, but a member of the current minor runs a
	// patch older than the one etcd's upgrade guide requires before that step.
	ErrPatchTooOld = errors.New("running patch too old for the minor step")
	// ErrOlderEntries: the target is the next minor, which cannot apply raft entries the minor
	// before the running one wrote, and a member may still replay such entries from its WAL
	// because it has not taken a raft snapshot since every member ran the running minor.
	ErrOlderEntries = errors.New("members may still replay entries an older minor wrote")
)

// Rejected is a refused version change. Its message names the rule it breaks, what runs, and
// the version(s) the cluster may move to next; it is meant for a condition and an Event, so it
// is deterministic (versions sorted, no addresses).
type Rejected struct {
	// Rule is one of the Err* rules above, or ErrMalformed.
	Rule error
	// Target is the refused version, as given.
	Target string
	msg    string
}

// Error returns the message for people.
func (e *Rejected) Error() string { return e.msg }

// Unwrap returns the rule, for errors.Is.
func (e *Rejected) Unwrap() error { return e.Rule }

// Check decides whether the cluster may move to target given the versions its members run
// (docs/design/versions.md, "Rules"):
//
//   - target older than 3.5.0 → refused;
//   - major differs from any running member → refused;
//   - target minor below the highest running minor → refused (no downgrade below a minor that
//     runs: once every member ran it, etcd raised the cluster version and older members
//     cannot rejoin);
//   - target minor above the lowest running minor + 1 → refused (one minor at a time);
//   - target minor = lowest running minor + 1 → every member on the lowest minor must run at
//     least MinimumBeforeStep of it;
//   - same minor, any patch, up or down → allowed.
//
// running holds one version per member (empty or unparseable entries, such as a member that has
// not answered yet, are ignored); with none, only the oldest-version rule applies. It returns
// nil or a *Rejected.
func Check(target string, running []string) error {
	run := parseAll(running)
	t, err := Parse(target)
	if err != nil {
		return reject(ErrMalformed, target, "version %q is not MAJOR.MINOR.PATCH; %s", target, allowed(run))
	}
	if t.Compare(Oldest) < 0 {
		return reject(ErrTooOld, target, "version %s is older than %s, the oldest version the operator runs; %s", t, Oldest, allowed(run))
	}
	if len(run) == 0 {
		return nil
	}
	low, high := run[0], run[len(run)-1]
	switch {
	case t.Major != low.Major || t.Major != high.Major:
		return reject(ErrMajorChange, target, "version %s changes the major version: %s; %s", t, runs(run), allowed(run))
	case t.Minor < high.Minor:
		return reject(ErrMinorDowngrade, target, "version %s downgrades below the running minor %s: %s; %s", t, high.MinorString(), runs(run), allowed(run))
	case t.Minor > low.Minor+1:
		return reject(ErrMinorSkip, target, "version %s skips a minor: %s; %s", t, runs(run), stepFirst(low))
	case t.Minor == low.Minor+1:
		if m, ok := MinimumBeforeStep(low); ok && low.Compare(m) < 0 {
			return reject(ErrPatchTooOld, target, "version %s needs every %s member on %s or later: %s; %s",
				t, low.MinorString(), m, runs(run), patchFirst(low, m))
		}
	}
	return nil
}

func reject(rule error, target, format string, args ...any) *Rejected {
	return &Rejected{Rule: rule, Target: target, msg: fmt.Sprintf(format, args...)}
}

// parseAll parses the running versions, drops what does not parse, and sorts and dedupes the
// rest, so that messages do not depend on member order.
func parseAll(running []string) []Version {
	var out []Version
	for _, s := range running {
		if v, err := Parse(s); err == nil {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, Version.Compare)
	return slices.Compact(out)
}

// runs describes the running versions.
func runs(run []Version) string {
	if len(run) == 1 {
		return "the cluster runs " + run[0].String()
	}
	s := make([]string, len(run))
	for i, v := range run {
		s[i] = v.String()
	}
	return "the members run " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// line names a minor line and, when the operator supports it, its newest supported patch.
func line(major, minor int) string {
	l := fmt.Sprintf("%d.%d.x", major, minor)
	if n, ok := newest(major, minor); ok {
		l += fmt.Sprintf(" (the newest supported %d.%d is %s)", major, minor, n)
	}
	return l
}

// stepFirst is the advice for a skipped minor: the next minor first, or, when the members are
// not on the patch that step needs, that patch first.
func stepFirst(low Version) string {
	if m, ok := MinimumBeforeStep(low); ok && low.Compare(m) < 0 {
		return patchFirst(low, m)
	}
	return "upgrade to " + line(low.Major, low.Minor+1) + " first"
}

// patchFirst is the advice when the members of low's minor are below the patch m a minor step
// needs.
func patchFirst(low, m Version) string {
	return fmt.Sprintf("upgrade to %s or later first, then to %s", m, line(low.Major, low.Minor+1)) + samePatchHint(low)
}

// samePatchHint names the newest supported patch of low's minor, the obvious first step.
func samePatchHint(low Version) string {
	if n, ok := newest(low.Major, low.Minor); ok {
		return fmt.Sprintf("; the newest supported %s is %s", low.MinorString(), n)
	}
	return ""
}

// allowed lists the versions the cluster may move to from what runs: any patch of the highest
// running minor, and the next minor above the lowest one when it is the same or the next one,
// once the members of the lowest minor are on the patch that step needs.
func allowed(run []Version) string {
	if len(run) == 0 {
		s := make([]string, len(supported))
		for i, v := range supported {
			s[i] = v.String()
		}
		return "choose " + Oldest.String() + " or later; the supported versions are " + strings.Join(s, ", ")
	}
	low, high := run[0], run[len(run)-1]
	if low.Major != high.Major || high.Minor > low.Minor+1 {
		// Not a state the operator creates (every change was checked against what ran), but one
		// a hand-made or migrated cluster might be in: no target satisfies both minor rules.
		return "no version is allowed while the members span more than one minor"
	}
	lines := []string{line(high.Major, high.Minor)}
	if high.Minor == low.Minor {
		if m, ok := MinimumBeforeStep(low); ok && low.Compare(m) < 0 {
			return "allowed: " + lines[0] + fmt.Sprintf("; moving to %d.%d.x needs %s or later first", low.Major, low.Minor+1, m)
		}
		lines = append(lines, line(low.Major, low.Minor+1))
	}
	return "allowed: " + strings.Join(lines, " or ")
}

// NeedsSnapshotBeforeStep reports whether the step from v's minor to the next one needs every
// member to have taken a raft snapshot since the whole cluster ran v's minor. A member restarted
// on the next minor replays its WAL from its last snapshot and the leader sends a new member the
// entries after its own, so until then a member may be handed entries the minor before v's
// wrote. etcd 3.5 still proposes some entries in the v2 request format (cluster version, member
// attributes); 3.6 applies them, 3.7 removed that format and panics on them at start
// (docs/e2e-lifecycle.md, finding 9).
func NeedsSnapshotBeforeStep(v Version) bool {
	return v.Major == 3 && v.Minor == 6
}

// CheckSnapshotted refuses target, the next minor after the lowest running version low, while
// not every member has snapshotted under low's minor (NeedsSnapshotBeforeStep); wait says what
// the cluster waits for, in the caller's terms. It returns nil or a *Rejected.
func CheckSnapshotted(target string, low Version, snapshotted bool, wait string) error {
	t, err := Parse(target)
	if err != nil || snapshotted || t.Major != low.Major || t.Minor != low.Minor+1 || !NeedsSnapshotBeforeStep(low) {
		return nil
	}
	return reject(ErrOlderEntries, target,
		"version %s must wait until every member has taken a raft snapshot under %s, or a member may replay entries %d.%d wrote, which %s cannot read: %s; keep %s until then (write to the cluster, or lower options.snapshotCount, to get there sooner)",
		t, low.MinorString(), low.Major, low.Minor-1, t.MinorString(), wait, low)
}
