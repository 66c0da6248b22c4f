package backup

import (
	"testing"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// TestMetricReason: every reason the operator or its agent fails a snapshot with is its own
// label; anything else, which only a foreign or future termination message can carry, is Failed.
func TestMetricReason(t *testing.T) {
	t.Parallel()
	known := append([]string{}, failureReasons...)
	for _, r := range snapshot.Reasons {
		known = append(known, string(r))
	}
	for _, r := range known {
		if got := MetricReason(r); got != r {
			t.Errorf("MetricReason(%q) = %q, want it unchanged", r, got)
		}
	}
	for _, r := range []string{"", "SomethingNew", ReasonJobRunning, ReasonSnapshotStored, "NoSpace\n"} {
		if got := MetricReason(r); got != string(snapshot.ReasonFailed) {
			t.Errorf("MetricReason(%q) = %q, want Failed", r, got)
		}
	}
}

// TestEveryFailureIsAKnownReason: the planner's failures all use reasons failureReasons lists,
// so none is counted as Failed by mistake.
func TestEveryFailureIsAKnownReason(t *testing.T) {
	t.Parallel()
	inputs := []Input{
		{},
		{ImageSet: true},
		{ImageSet: true, ClusterFound: true, ClusterPaused: true},
		{ImageSet: true, ClusterFound: true, AuthRequested: true, Now: t0.Add(AuthLatchTimeout), Created: t0},
		{ImageSet: true, ClusterFound: true, Missing: "Secret x", Now: t0.Add(AuthLatchTimeout), Created: t0},
		{Phase: etcdv1alpha2.SnapshotPhaseStarted, Job: JobAbsent},
		{Phase: etcdv1alpha2.SnapshotPhaseStarted, Job: JobFailed},
		{Phase: etcdv1alpha2.SnapshotPhaseStarted, Job: JobSucceeded},
	}
	for _, in := range inputs {
		d := Plan(in)
		if d.Phase != etcdv1alpha2.SnapshotPhaseFailed {
			t.Fatalf("Plan(%+v) = %s, want Failed", in, d.Phase)
		}
		if got := MetricReason(d.Reason); got != d.Reason {
			t.Errorf("failure reason %q is counted as %q: add it to failureReasons", d.Reason, got)
		}
	}
}
