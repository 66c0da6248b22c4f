package health_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/health"
)

// fixtureIndex mirrors index.json, written by TestTerminationFixtures in test/integration/health
// next to the logs it captured from real etcd processes.
type fixtureIndex struct {
	Version string `json:"version"`
	Cases   map[string]struct {
		ExitCode  int32  `json:"exitCode"`
		Killed    bool   `json:"killed"`
		ClusterID string `json:"clusterID"`
		Class     string `json:"class"`
		Pattern   string `json:"pattern"`
	} `json:"cases"`
}

// requiredCases must exist for every supported minor: the failures docs/design/healing.md
// classifies from termination messages.
var requiredCases = []string{
	"db-corrupt", "wal-corrupt", "db-older-than-snapshot", "wiped-restart-new", "wiped-restart-existing",
	"wiped-restart-after-removal", "restart-after-removal", "cluster-id-mismatch", "peer-url-mismatch",
	"quota-too-large",
}

func readIndex(t *testing.T, minor string) fixtureIndex {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", minor, "index.json"))
	if err != nil {
		t.Fatalf("etcd %s has no captured fixtures (%v): run TestTerminationFixtures in test/integration/health with -update-fixtures", minor, err)
	}
	var idx fixtureIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatalf("reading %s index: %v", minor, err)
	}
	if health.Minor(idx.Version) != minor {
		t.Fatalf("testdata/%s was captured from etcd %s", minor, idx.Version)
	}
	return idx
}

// TestFixturesCoverEverySupportedMinor fails when a pinned minor has no fixtures, or misses a
// case: a new etcd minor must come with its own captured logs before its messages are trusted.
func TestFixturesCoverEverySupportedMinor(t *testing.T) {
	t.Parallel()
	for _, minor := range health.SupportedMinors() {
		idx := readIndex(t, minor)
		for _, c := range requiredCases {
			if _, ok := idx.Cases[c]; !ok {
				t.Errorf("etcd %s: no fixture for case %s", minor, c)
			}
			if _, err := os.Stat(filepath.Join("testdata", minor, c+".log")); err != nil {
				t.Errorf("etcd %s: %v", minor, err)
			}
		}
	}
	dirs, err := filepath.Glob(filepath.Join("testdata", "3.*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !slices.Contains(health.SupportedMinors(), filepath.Base(d)) {
			t.Errorf("fixtures for %s, which has no pattern table", filepath.Base(d))
		}
	}
}

// TestFixturesClassify checks every captured log, cut the way the kubelet cuts it, against the
// classification recorded when it was captured, and what Classify makes of it.
func TestFixturesClassify(t *testing.T) {
	t.Parallel()
	for _, minor := range health.SupportedMinors() {
		idx := readIndex(t, minor)
		for name, fc := range idx.Cases {
			t.Run(minor+"/"+name, func(t *testing.T) {
				t.Parallel()
				b, err := os.ReadFile(filepath.Join("testdata", minor, name+".log"))
				if err != nil {
					t.Fatal(err)
				}
				if len(b) > 4096 {
					t.Errorf("fixture is %d bytes, more than a termination message can hold", len(b))
				}
				msg := health.TerminationMessageTail(b)
				got := health.ClassifyTermination(idx.Version, fc.ClusterID, msg)
				if string(got.Class) != fc.Class || got.Pattern != fc.Pattern {
					t.Fatalf("classified as %q/%q, captured as %q/%q", got.Class, got.Pattern, fc.Class, fc.Pattern)
				}
				checkFixtureOutcome(t, minor, name, fc.ClusterID, &health.Termination{ExitCode: fc.ExitCode, Reason: "Error", Message: msg})
			})
		}
	}
}

// checkFixtureOutcome runs a captured termination through Classify the way a crash-looping Pod
// presents it: once (not enough), then twice in a row.
func checkFixtureOutcome(t *testing.T, minor, name, clusterID string, term *health.Termination) {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	obs := health.Observation{
		Now: now, Minor: minor, ClusterID: clusterID, RecordedPodUID: "uid-1",
		Etcd: health.EtcdView{MemberListKnown: true, Added: true, InMemberList: true},
		Pod: &health.Pod{
			UID: "uid-1", CreatedAt: now.Add(-time.Hour), Phase: corev1.PodRunning,
			TemplateCurrent: true, WasReadyWithTemplate: true, Node: &health.Node{Name: "n1", Ready: true},
			Container: health.Container{WaitingReason: "CrashLoopBackOff", RestartCount: 1, LastTermination: term},
		},
		FirstFailure: health.Failure{At: now.Add(-30 * time.Second), RestartCount: ptr.To[int32](0)},
	}
	once := health.Classify(obs)
	if once.Action == health.ActionReplace {
		t.Fatalf("one termination replaced the member: %+v", once)
	}
	obs.Pod.Container.RestartCount = 2
	obs.Pod.Container.PreviousTermination = term
	twice := health.Classify(obs)

	switch name {
	case "db-corrupt", "wal-corrupt", "db-older-than-snapshot":
		wantOutcome(t, twice, health.ReasonDataCorrupt, health.ActionReplace)
	case "wiped-restart-new", "wiped-restart-existing", "cluster-id-mismatch":
		wantOutcome(t, twice, health.ReasonDataLost, health.ActionReplace)
	case "wiped-restart-after-removal":
		wantOutcome(t, twice, health.ReasonRemovedFromCluster, health.ActionReplace)
	case "restart-after-removal":
		// The log tail does not say why; etcd's member list does.
		if twice.Action == health.ActionReplace {
			t.Fatalf("replaced on an unspecific log tail: %+v", twice)
		}
		obs.Etcd.InMemberList = false
		wantOutcome(t, health.Classify(obs), health.ReasonRemovedFromCluster, health.ActionReplace)
	case "damage-wal-truncated", "damage-wal-garbage-header", "damage-db-garbage-header", "damage-snap-dir-missing":
		// In a Pod the member was Ready in, a known pattern twice replaces it at once; an
		// unknown one waits for the crash-loop timers. A recreated Pod is damage_test.go's.
		if got := twice.Action == health.ActionReplace; got != health.FatalClass(fc(t, minor, name).Class).Replaceable() {
			t.Fatalf("twice in a Pod it was Ready in: %+v", twice)
		}
	case "peer-url-mismatch", "quota-too-large":
		// A configuration error is not a data problem: it waits for the crash-loop timers.
		if twice.Action == health.ActionReplace {
			t.Fatalf("replaced on a configuration error before any grace: %+v", twice)
		}
		if !strings.Contains(twice.Message, name) {
			t.Fatalf("message does not name the pattern: %q", twice.Message)
		}
	default:
		t.Fatalf("no expectation for fixture %s", name)
	}
}

func wantOutcome(t *testing.T, r health.Result, reason string, action health.Action) {
	t.Helper()
	if r.Status != metav1.ConditionFalse || r.Reason != reason || r.Action != action {
		t.Fatalf("got %s/%s action %s (%q), want False/%s action %s", r.Status, r.Reason, r.Action, r.Message, reason, action)
	}
}

// TestClusterIDMismatchSeenFromHealthyMember: healthy members print the same cluster-ID
// mismatch lines about an intruder; with their own cluster ID they must not classify.
func TestClusterIDMismatchSeenFromHealthyMember(t *testing.T) {
	t.Parallel()
	for _, minor := range health.SupportedMinors() {
		b, err := os.ReadFile(filepath.Join("testdata", minor, "cluster-id-mismatch.log"))
		if err != nil {
			t.Fatal(err)
		}
		msg := health.TerminationMessageTail(b)
		// The intruder's own cluster ID, as printed in its lines: from its point of view it is
		// "the cluster", so nothing in the log is foreign.
		const key = `"local-member-cluster-id":"`
		i := strings.Index(msg, key)
		if i < 0 {
			t.Fatalf("etcd %s: no local-member-cluster-id in the fixture", minor)
		}
		own := msg[i+len(key):]
		own = own[:strings.IndexByte(own, '"')]
		if got := health.ClassifyTermination(minor, own, msg); got.Class != health.ClassNone {
			t.Errorf("etcd %s: classified %q with the printing member's own cluster ID", minor, got.Class)
		}
		if got := health.ClassifyTermination(minor, "", msg); got.Class != health.ClassNone {
			t.Errorf("etcd %s: classified %q without a known cluster ID", minor, got.Class)
		}
	}
}

// TestPanicFixturesClassifyFromTheStackAlone: a Go panic ends with its goroutine trace, which
// can push the "panic:" line out of the kubelet's 2 KiB tail (it happened while generating the
// fixtures). Every panic fixture must classify the same from the trace alone, except where the
// panicking frame is not specific (3.5's snapshot recovery panics in NewServer), which relies on
// the message line, 1.1 KiB from the end in that release.
func TestPanicFixturesClassifyFromTheStackAlone(t *testing.T) {
	t.Parallel()
	// A quota too large to map panics in newBackend like a corrupt file; only the error line
	// ("mmap too large") tells them apart. The CRD caps options.quotaBackendBytes far below
	// that size, so through the operator this needs a hand-edited Pod.
	messageOnly := map[string]bool{"3.5/db-older-than-snapshot": true,
		"3.5/quota-too-large": true, "3.6/quota-too-large": true, "3.7/quota-too-large": true}
	for _, minor := range health.SupportedMinors() {
		idx := readIndex(t, minor)
		for name, fc := range idx.Cases {
			b, err := os.ReadFile(filepath.Join("testdata", minor, name+".log"))
			if err != nil {
				t.Fatal(err)
			}
			i := strings.Index(string(b), "\ngoroutine ")
			// A panic only the generic pattern knows has no specific frame to find; the
			// damaged-data rule replaces such a member whatever it printed.
			if i < 0 || !strings.Contains(string(b), "\npanic: ") || messageOnly[minor+"/"+name] || fc.Pattern == "panic" {
				continue
			}
			stack := string(b[i+1:])
			if got := health.ClassifyTermination(minor, fc.ClusterID, stack); string(got.Class) != fc.Class {
				t.Errorf("etcd %s, %s: the trace alone classifies as %q (pattern %q), the whole tail as %q", minor, name, got.Class, got.Pattern, fc.Class)
			}
		}
	}
}
