package health_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/health"
)

// damageCases are the captured damaged data dirs (test/integration/health, damage_test.go), per
// minor: 3.5 and 3.6 rebuild a bbolt file from the WAL when member/snap is gone, so only 3.7
// fails on it.
func damageCases(minor string) []string {
	cs := []string{"damage-wal-truncated", "damage-wal-garbage-header", "damage-db-garbage-header"}
	if minor != "3.5" && minor != "3.6" {
		cs = append(cs, "damage-snap-dir-missing")
	}
	return cs
}

// fc returns the index entry of a captured case.
func fc(t *testing.T, minor, name string) struct {
	ExitCode  int32  `json:"exitCode"`
	Killed    bool   `json:"killed"`
	ClusterID string `json:"clusterID"`
	Class     string `json:"class"`
	Pattern   string `json:"pattern"`
} {
	t.Helper()
	e, ok := readIndex(t, minor).Cases[name]
	if !ok {
		t.Fatalf("etcd %s: no fixture %s", minor, name)
	}
	return e
}

// fixtureTermination is a captured case as the kubelet reports it.
func fixtureTermination(t *testing.T, minor, name string) *health.Termination {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", minor, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return &health.Termination{ExitCode: fc(t, minor, name).ExitCode, Reason: "Error", Message: health.TerminationMessageTail(b)}
}

// recreatedPod is a PVC member that ran before (data expected), whose Pod was deleted and
// recreated with the template it was Ready with, and whose etcd has failed starts times in it,
// the last with term.
func recreatedPod(minor, clusterID string, starts int32, term *health.Termination) health.Observation {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return health.Observation{
		Now: now, Minor: minor, ClusterID: clusterID, RecordedPodUID: "uid-2", DataExpected: true,
		Etcd: health.EtcdView{MemberListKnown: true, Added: true, InMemberList: true},
		Pod: &health.Pod{
			UID: "uid-2", CreatedAt: now.Add(-20 * time.Second), Phase: corev1.PodRunning,
			TemplateCurrent: true, RanTemplate: true, Node: &health.Node{Name: "n1", Ready: true},
			Container: health.Container{WaitingReason: "CrashLoopBackOff", RestartCount: starts - 1, LastTermination: term},
		},
		FirstFailure: health.Failure{At: now.Add(-25 * time.Second)},
	}
}

// TestDamageFixturesReplaceARecreatedPod: every captured kind of damage, in every supported
// minor, on a member whose Pod was recreated with the template it ran: one failed start is not
// enough, the second replaces it, whatever etcd printed (issue #15: "cannot use none as id" is
// no known pattern), with the known pattern's class when there is one.
func TestDamageFixturesReplaceARecreatedPod(t *testing.T) {
	t.Parallel()
	for _, minor := range health.SupportedMinors() {
		for _, name := range damageCases(minor) {
			t.Run(minor+"/"+name, func(t *testing.T) {
				t.Parallel()
				e := fc(t, minor, name)
				term := fixtureTermination(t, minor, name)
				once := health.Classify(recreatedPod(minor, e.ClusterID, 1, term))
				if once.Action == health.ActionReplace || once.Status != "True" {
					t.Fatalf("one failed start: %+v", once)
				}
				twice := health.Classify(recreatedPod(minor, e.ClusterID, 2, term))
				want := health.ReasonDataCorrupt
				if health.FatalClass(e.Class).Replaceable() {
					want = e.Class
				}
				wantOutcome(t, twice, want, health.ActionReplace)
				if !strings.Contains(twice.Message, "damaged") {
					t.Fatalf("message does not say why: %q", twice.Message)
				}
			})
		}
	}
}

// TestDamagedDataExceptions: what looks like damage but is not replaced by the damaged-data
// rule.
func TestDamagedDataExceptions(t *testing.T) {
	t.Parallel()
	for _, minor := range health.SupportedMinors() {
		garbage := fixtureTermination(t, minor, "damage-wal-garbage-header")
		cases := map[string]func(o *health.Observation){
			// A roll's new template: a start failure, which halts the roll after memberStartGrace.
			"new template": func(o *health.Observation) { o.Pod.RanTemplate = false },
			// A new member's first Pod: its data dir held nothing of its own.
			"no data expected": func(o *health.Observation) { o.DataExpected = false },
			// Memory members lose their data with the Pod and are DataLost instead.
			"memory": func(o *health.Observation) { o.Memory, o.RecordedPodUID = true, "" },
			// Still running its second start.
			"running": func(o *health.Observation) {
				o.Pod.Container.Running, o.Pod.Container.WaitingReason = true, ""
			},
			// Killed by a liveness probe: it says nothing about why etcd did not come up.
			"killed": func(o *health.Observation) {
				o.Pod.Container.LastTermination = &health.Termination{ExitCode: 137, Reason: "Error", Message: garbage.Message}
			},
			// etcd says its flags are wrong: the spec is at fault, not the data.
			"misconfigured": func(o *health.Observation) {
				o.Pod.Container.LastTermination = fixtureTermination(t, minor, "quota-too-large")
			},
			"misconfigured before": func(o *health.Observation) {
				o.Pod.Container.PreviousTermination = fixtureTermination(t, minor, "peer-url-mismatch")
			},
		}
		for name, change := range cases {
			t.Run(minor+"/"+name, func(t *testing.T) {
				t.Parallel()
				o := recreatedPod(minor, "", 2, garbage)
				change(&o)
				if r := health.Classify(o); r.Action == health.ActionReplace {
					t.Fatalf("replaced: %+v", r)
				}
			})
		}
	}
}

// TestRecreatedPodNeverReadyIsACrashLoopNotAStartFailure: a Pod recreated with the template the
// member ran that never becomes Ready and never exits (an image that cannot be pulled) is the
// crash loop of a member that was Ready with its current template, after memberFailureGrace;
// it is not a start failure, which would call it a halted roll.
func TestRecreatedPodNeverReadyIsACrashLoopNotAStartFailure(t *testing.T) {
	t.Parallel()
	o := recreatedPod("3.6", "", 1, nil)
	o.Pod.Container = health.Container{WaitingReason: "ImagePullBackOff"}
	o.Pod.CreatedAt = o.Now.Add(-10 * time.Minute)
	o.FirstFailure.At = o.Now.Add(-10 * time.Minute)
	wantOutcome(t, health.Classify(o), health.ReasonCrashLoop, health.ActionReplace)

	o.Pod.RanTemplate = false
	if r := health.Classify(o); r.Reason != health.ReasonStartFailed || r.Action != health.ActionHaltRollout {
		t.Fatalf("a new template that never starts: %+v", r)
	}
}

// TestDamageFixturesCoverEverySupportedMinor fails when a supported minor lacks a captured kind
// of damage.
func TestDamageFixturesCoverEverySupportedMinor(t *testing.T) {
	t.Parallel()
	for _, minor := range health.SupportedMinors() {
		idx := readIndex(t, minor)
		for _, name := range damageCases(minor) {
			if _, ok := idx.Cases[name]; !ok {
				t.Errorf("etcd %s: no fixture for %s", minor, name)
			}
		}
		if !slices.Contains(damageCases(minor), "damage-snap-dir-missing") {
			if _, ok := idx.Cases["damage-snap-dir-missing"]; ok {
				t.Errorf("etcd %s: a damage-snap-dir-missing fixture, but this minor survives it", minor)
			}
		}
	}
}
