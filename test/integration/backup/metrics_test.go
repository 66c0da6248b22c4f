package backup_test

import (
	"github.com/etcd-operator/etcd-operator/test/utils/series"
)

// requireFailures checks how many failures with reason the namespace's cluster etcd has counted.
func (w *snapshotWorld) requireFailures(reason string, want float64) {
	w.t.Helper()
	got, _ := series.Get(w.t, "etcd_operator_snapshot_failures_total", map[string]string{"namespace": w.ns, "cluster": "etcd", "reason": reason})
	if got.Value != want {
		w.t.Errorf("etcd_operator_snapshot_failures_total{reason=%q} = %v, want %v", reason, got.Value, want)
	}
}

// requireDurations checks how many snapshot durations the namespace's cluster etcd has
// recorded, and their sum in seconds.
func (w *snapshotWorld) requireDurations(count, sum float64) {
	w.t.Helper()
	got, _ := series.Get(w.t, "etcd_operator_snapshot_duration_seconds", map[string]string{"namespace": w.ns, "cluster": "etcd"})
	if got.Value != count || got.Sum != sum {
		w.t.Errorf("etcd_operator_snapshot_duration_seconds: count %v, sum %v; want %v, %v", got.Value, got.Sum, count, sum)
	}
}
