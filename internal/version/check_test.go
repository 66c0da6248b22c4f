package version_test

import (
	"errors"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/version"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		target  string
		running []string
		rule    error // nil: allowed
		msg     string
	}{
		// Allowed.
		{name: "new cluster", target: "3.6.16"},
		{name: "new cluster at the oldest version", target: "3.5.0"},
		{name: "unchanged", target: "3.5.35", running: []string{"3.5.35", "3.5.35", "3.5.35"}},
		{name: "patch up", target: "3.6.16", running: []string{"3.6.5"}},
		{name: "patch down", target: "3.6.1", running: []string{"3.6.16"}},
		{name: "patch down below a step minimum", target: "3.5.20", running: []string{"3.5.35"}},
		{name: "minor up at the step minimum", target: "3.6.0", running: []string{"3.5.32"}},
		{name: "minor up 3.6 to 3.7", target: "3.7.3", running: []string{"3.6.11", "3.6.16"}},
		{name: "minor step without a listed minimum", target: "3.8.0", running: []string{"3.7.0"}},
		{name: "a roll in progress re-targeted within the new minor", target: "3.6.10", running: []string{"3.5.35", "3.6.16"}},
		{name: "unparseable and empty running versions ignored", target: "3.6.16", running: []string{"", "garbage", "3.6.16"}},
		{name: "leading v", target: "v3.6.16", running: []string{"v3.5.35"}},

		// Refused.
		{
			name: "minor skip", target: "3.7.3", running: []string{"3.5.35"}, rule: version.ErrMinorSkip,
			msg: "version 3.7.3 skips a minor: the cluster runs 3.5.35; upgrade to 3.6.x (the newest supported 3.6 is 3.6.16) first",
		},
		{
			name: "minor skip from below the step minimum", target: "3.7.3", running: []string{"3.5.20"}, rule: version.ErrMinorSkip,
			msg: "version 3.7.3 skips a minor: the cluster runs 3.5.20; upgrade to 3.5.32 or later first, then to 3.6.x (the newest supported 3.6 is 3.6.16); the newest supported 3.5 is 3.5.35",
		},
		{
			name: "minor skip measured from the lowest running minor", target: "3.7.3", running: []string{"3.6.16", "3.5.35"}, rule: version.ErrMinorSkip,
			msg: "version 3.7.3 skips a minor: the members run 3.5.35 and 3.6.16; upgrade to 3.6.x (the newest supported 3.6 is 3.6.16) first",
		},
		{
			name: "minor downgrade", target: "3.5.35", running: []string{"3.6.16"}, rule: version.ErrMinorDowngrade,
			msg: "version 3.5.35 downgrades below the running minor 3.6: the cluster runs 3.6.16; allowed: 3.6.x (the newest supported 3.6 is 3.6.16) or 3.7.x (the newest supported 3.7 is 3.7.3)",
		},
		{
			name: "minor downgrade during a roll", target: "3.5.35", running: []string{"3.5.35", "3.6.16", "3.5.35"}, rule: version.ErrMinorDowngrade,
			msg: "version 3.5.35 downgrades below the running minor 3.6: the members run 3.5.35 and 3.6.16; allowed: 3.6.x (the newest supported 3.6 is 3.6.16)",
		},
		{
			name: "major change", target: "4.0.0", running: []string{"3.7.3"}, rule: version.ErrMajorChange,
			msg: "version 4.0.0 changes the major version: the cluster runs 3.7.3; allowed: 3.7.x (the newest supported 3.7 is 3.7.3) or 3.8.x",
		},
		{
			name: "major change down", target: "2.3.8", running: []string{"3.5.35"}, rule: version.ErrTooOld,
			msg: "version 2.3.8 is older than 3.5.0, the oldest version the operator runs; allowed: 3.5.x (the newest supported 3.5 is 3.5.35) or 3.6.x (the newest supported 3.6 is 3.6.16)",
		},
		{
			name: "minor step below the minimum patch", target: "3.6.16", running: []string{"3.5.35", "3.5.26"}, rule: version.ErrPatchTooOld,
			msg: "version 3.6.16 needs every 3.5 member on 3.5.32 or later: the members run 3.5.26 and 3.5.35; upgrade to 3.5.32 or later first, then to 3.6.x (the newest supported 3.6 is 3.6.16); the newest supported 3.5 is 3.5.35",
		},
		{
			name: "3.6 to 3.7 below the minimum patch", target: "3.7.0", running: []string{"3.6.10"}, rule: version.ErrPatchTooOld,
			msg: "version 3.7.0 needs every 3.6 member on 3.6.11 or later: the cluster runs 3.6.10; upgrade to 3.6.11 or later first, then to 3.7.x (the newest supported 3.7 is 3.7.3); the newest supported 3.6 is 3.6.16",
		},
		{
			name: "older than 3.5.0 on a new cluster", target: "3.4.34", rule: version.ErrTooOld,
			msg: "version 3.4.34 is older than 3.5.0, the oldest version the operator runs; choose 3.5.0 or later; the supported versions are 3.5.35, 3.6.16, 3.7.3",
		},
		{
			name: "older than 3.5.0 against a paused 3.5 cluster below the step minimum", target: "3.4.0", running: []string{"3.5.10"}, rule: version.ErrTooOld,
			msg: "version 3.4.0 is older than 3.5.0, the oldest version the operator runs; allowed: 3.5.x (the newest supported 3.5 is 3.5.35); moving to 3.6.x needs 3.5.32 or later first",
		},
		{
			name: "members spanning two minors", target: "3.6.0", running: []string{"3.5.35", "3.7.3"}, rule: version.ErrMinorDowngrade,
			msg: "version 3.6.0 downgrades below the running minor 3.7: the members run 3.5.35 and 3.7.3; no version is allowed while the members span more than one minor",
		},
		{
			name: "malformed", target: "3.6", running: []string{"3.6.16"}, rule: version.ErrMalformed,
			msg: `version "3.6" is not MAJOR.MINOR.PATCH; allowed: 3.6.x (the newest supported 3.6 is 3.6.16) or 3.7.x (the newest supported 3.7 is 3.7.3)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := version.Check(tt.target, tt.running)
			if tt.rule == nil {
				if err != nil {
					t.Fatalf("Check(%q, %q) = %v, want nil", tt.target, tt.running, err)
				}
				return
			}
			if !errors.Is(err, tt.rule) {
				t.Fatalf("Check(%q, %q) = %v, want rule %v", tt.target, tt.running, err, tt.rule)
			}
			var r *version.Rejected
			if !errors.As(err, &r) {
				t.Fatalf("Check(%q, %q) = %T, want *version.Rejected", tt.target, tt.running, err)
			}
			// The message is the user-facing text of the condition and the Event (the issue's
			// acceptance criterion: rule and allowed next version), so it is pinned exactly.
			if r.Error() != tt.msg || r.Target != tt.target {
				t.Errorf("Check(%q, %q):\n got  %q\n want %q", tt.target, tt.running, r.Error(), tt.msg)
			}
		})
	}
}

// TestCheckIsOrderIndependent: the message of a refusal does not depend on member order, so
// the condition does not flap and one Event per distinct message stays one.
func TestCheckIsOrderIndependent(t *testing.T) {
	t.Parallel()
	a := version.Check("3.7.0", []string{"3.5.35", "3.6.16", "3.5.33"})
	b := version.Check("3.7.0", []string{"3.6.16", "3.5.33", "3.5.35", "3.6.16"})
	if a == nil || b == nil || a.Error() != b.Error() {
		t.Errorf("messages differ by order: %v / %v", a, b)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	good := map[string]version.Version{
		"3.5.35": {Major: 3, Minor: 5, Patch: 35}, "v3.6.0": {Major: 3, Minor: 6}, "10.20.30": {Major: 10, Minor: 20, Patch: 30},
	}
	for in, want := range good {
		got, err := version.Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3", "3.6", "3.6.1.2", "3.6.x", "3.6.-1", "3.6.+1", "3.6.1-rc.0", " 3.6.1", "vv3.6.1", "3..1"} {
		if _, err := version.Parse(in); !errors.Is(err, version.ErrMalformed) {
			t.Errorf("Parse(%q) error = %v, want ErrMalformed", in, err)
		}
	}
}

func TestMinimumBeforeStepIsSupported(t *testing.T) {
	t.Parallel()
	// Every step minimum must itself be reachable with a supported patch of that minor, or the
	// advice "upgrade to 3.5.32 or later first" would point at nothing the operator runs.
	for _, v := range version.Supported() {
		if m, ok := version.MinimumBeforeStep(v); ok && v.Compare(m) < 0 {
			t.Errorf("the newest supported %s is %s, below the step minimum %s", v.MinorString(), v, m)
		}
	}
}

func TestCheckSnapshotted(t *testing.T) {
	t.Parallel()
	v36, v35 := version.Version{Major: 3, Minor: 6, Patch: 16}, version.Version{Major: 3, Minor: 5, Patch: 35}
	const wait = "every member must apply raft index 11101"
	for _, tt := range []struct {
		name        string
		target      string
		low         version.Version
		snapshotted bool
		refused     bool
	}{
		{name: "3.6 to 3.7 before the snapshot", target: "3.7.3", low: v36, refused: true},
		{name: "3.6 to 3.7 after the snapshot", target: "3.7.3", low: v36, snapshotted: true},
		{name: "3.6 patch change", target: "3.6.11", low: v36},
		{name: "3.5 to 3.6 needs no snapshot", target: "3.6.16", low: v35},
		{name: "unparseable target is Check's business", target: "3.7", low: v36},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := version.CheckSnapshotted(tt.target, tt.low, tt.snapshotted, wait)
			if !tt.refused {
				if err != nil {
					t.Fatalf("CheckSnapshotted = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, version.ErrOlderEntries) {
				t.Fatalf("CheckSnapshotted = %v, want rule %v", err, version.ErrOlderEntries)
			}
			const want = "version 3.7.3 must wait until every member has taken a raft snapshot under 3.6, or a member may replay entries 3.5 wrote, which 3.7 cannot read: " +
				wait + "; keep 3.6.16 until then (write to the cluster, or lower options.snapshotCount, to get there sooner)"
			if err.Error() != want {
				t.Errorf("CheckSnapshotted:\n got  %q\n want %q", err.Error(), want)
			}
		})
	}
}

func TestLowest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want string
		ok   bool
	}{
		{nil, "", false},
		{[]string{"garbage", ""}, "", false},
		{[]string{"3.6.16", "3.5.35", "3.7.3"}, "3.5.35", true},
		{[]string{"3.6.9", "3.6.10"}, "3.6.9", true}, // numeric, not lexical
		{[]string{"v3.6.16", "nonsense", "3.6.2"}, "3.6.2", true},
	} {
		got, ok := version.Lowest(tc.in)
		if ok != tc.ok || (ok && got.String() != tc.want) {
			t.Errorf("Lowest(%q) = %v, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
