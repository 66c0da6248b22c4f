package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/utils/ptr"
)

// Like the tests in metrics_test.go, these share package-level state and do not run in parallel.

func TestSnapshotFailuresByReason(t *testing.T) {
	t.Cleanup(func() { ForgetSnapshots("ns1", "etcd"); ForgetSnapshots("ns1", "other") })
	SnapshotFailed("ns1", "etcd", "NoSpace")
	SnapshotFailed("ns1", "etcd", "NoSpace")
	SnapshotFailed("ns1", "etcd", "ClusterPaused")
	SnapshotFailed("ns1", "other", "NoSpace")
	if got := testutil.ToFloat64(snapshotFailures.WithLabelValues("ns1", "etcd", "NoSpace")); got != 2 {
		t.Errorf("NoSpace failures of ns1/etcd = %v, want 2", got)
	}
	want := `
# HELP etcd_operator_snapshot_failures_total Snapshots the operator moved to Failed, by the reason of their Ready condition.
# TYPE etcd_operator_snapshot_failures_total counter
etcd_operator_snapshot_failures_total{cluster="etcd",namespace="ns1",reason="ClusterPaused"} 1
etcd_operator_snapshot_failures_total{cluster="etcd",namespace="ns1",reason="NoSpace"} 2
etcd_operator_snapshot_failures_total{cluster="other",namespace="ns1",reason="NoSpace"} 1
`
	if err := testutil.CollectAndCompare(snapshotFailures, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestSnapshotDuration(t *testing.T) {
	t.Cleanup(func() { ForgetSnapshots("ns2", "etcd") })
	SnapshotCompleted("ns2", "etcd", 4*time.Second)
	SnapshotCompleted("ns2", "etcd", 40*time.Second)
	SnapshotCompleted("ns2", "etcd", -time.Second) // a clock that stepped back counts as 0
	want := `
# HELP etcd_operator_snapshot_duration_seconds Time from the creation of a snapshot's Job to the operator seeing the snapshot Complete.
# TYPE etcd_operator_snapshot_duration_seconds histogram
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="1"} 1
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="2.5"} 1
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="5"} 2
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="10"} 2
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="30"} 2
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="60"} 3
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="120"} 3
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="300"} 3
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="600"} 3
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="1200"} 3
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="1800"} 3
etcd_operator_snapshot_duration_seconds_bucket{cluster="etcd",namespace="ns2",le="+Inf"} 3
etcd_operator_snapshot_duration_seconds_sum{cluster="etcd",namespace="ns2"} 44
etcd_operator_snapshot_duration_seconds_count{cluster="etcd",namespace="ns2"} 3
`
	if err := testutil.CollectAndCompare(snapshotDuration, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestLastSnapshotGauges(t *testing.T) {
	t.Cleanup(func() { ForgetSnapshots("ns3", "etcd") })
	at := time.Unix(1_800_000_000, 0)
	SetLastSnapshot("ns3", "etcd", at, ptr.To[int64](4096))
	if got := testutil.ToFloat64(snapshotLastSuccess.WithLabelValues("ns3", "etcd")); got != 1_800_000_000 {
		t.Errorf("last success = %v, want 1800000000", got)
	}
	if got := testutil.ToFloat64(snapshotLastSize.WithLabelValues("ns3", "etcd")); got != 4096 {
		t.Errorf("last size = %v, want 4096", got)
	}
	// A newer snapshot whose object is already gone: the time moves, the old size goes.
	SetLastSnapshot("ns3", "etcd", at.Add(time.Hour), nil)
	if got := testutil.ToFloat64(snapshotLastSuccess.WithLabelValues("ns3", "etcd")); got != 1_800_003_600 {
		t.Errorf("last success = %v, want 1800003600", got)
	}
	if n := testutil.CollectAndCount(snapshotLastSize); n != 0 {
		t.Errorf("%d size series, want none while the size is unknown", n)
	}
}

// TestForgetSnapshots: a deleted cluster's series go, every other cluster's stay.
func TestForgetSnapshots(t *testing.T) {
	for _, c := range []string{"gone", "kept"} {
		SetLastSnapshot("ns4", c, time.Unix(1, 0), ptr.To[int64](1))
		SnapshotCompleted("ns4", c, time.Second)
		SnapshotFailed("ns4", c, "NoSpace")
		SnapshotFailed("ns4", c, "Failed")
	}
	ForgetSnapshots("ns4", "gone")
	counts := map[string]int{
		"last success": testutil.CollectAndCount(snapshotLastSuccess),
		"last size":    testutil.CollectAndCount(snapshotLastSize),
		"duration":     testutil.CollectAndCount(snapshotDuration),
		"failures":     testutil.CollectAndCount(snapshotFailures),
	}
	want := map[string]int{"last success": 1, "last size": 1, "duration": 1, "failures": 2}
	for m, n := range want {
		if counts[m] != n {
			t.Errorf("%s: %d series after forgetting ns4/gone, want %d (ns4/kept's)", m, counts[m], n)
		}
	}
	ForgetSnapshots("ns4", "kept")
	for _, n := range []int{testutil.CollectAndCount(snapshotLastSuccess), testutil.CollectAndCount(snapshotFailures)} {
		if n != 0 {
			t.Errorf("%d series left after forgetting every cluster", n)
		}
	}
}
