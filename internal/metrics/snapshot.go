package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Backup metrics (docs/operator.md, "Metrics"; docs/backup-restore.md, "Metrics"). They carry
// one series per cluster, unlike the metrics above: "when did this cluster last get a backup"
// is the question they answer, and a fleet's alert needs it per cluster. A cluster costs at
// most two gauges, one histogram (len(snapshotDurationBuckets)+3 series) and one counter per
// failure reason that occurred; ForgetSnapshots drops them all when the cluster is deleted.
var (
	snapshotLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_snapshot_last_success_timestamp_seconds",
		Help: "Unix time at which the cluster's newest Complete snapshot completed (the cluster's status.lastSnapshot.completedAt).",
	}, []string{"namespace", "cluster"})

	snapshotLastSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_snapshot_last_size_bytes",
		Help: "Size in bytes of the artifact of the cluster's newest Complete snapshot, while its EtcdSnapshot exists.",
	}, []string{"namespace", "cluster"})

	snapshotDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_operator_snapshot_duration_seconds",
		Help:    "Time from the creation of a snapshot's Job to the operator seeing the snapshot Complete.",
		Buckets: snapshotDurationBuckets,
	}, []string{"namespace", "cluster"})

	snapshotFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_snapshot_failures_total",
		Help: "Snapshots the operator moved to Failed, by the reason of their Ready condition.",
	}, []string{"namespace", "cluster", "reason"})
)

// snapshotDurationBuckets span a small cluster's few seconds (Pod start included) to the Job's
// 1800 s deadline (docs/backup-restore.md, "The snapshot Job").
var snapshotDurationBuckets = []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800}

func init() {
	ctrlmetrics.Registry.MustRegister(snapshotLastSuccess, snapshotLastSize, snapshotDuration, snapshotFailures)
}

// SnapshotCompleted records how long a snapshot of namespace/cluster took. The caller records
// each snapshot once, on the transition to Complete it made itself.
func SnapshotCompleted(namespace, cluster string, took time.Duration) {
	snapshotDuration.WithLabelValues(namespace, cluster).Observe(max(took, 0).Seconds())
}

// SnapshotFailed counts one snapshot of namespace/cluster that failed with reason, which must
// come from a closed set (internal/backup.MetricReason). The caller records each snapshot
// once, on the transition to Failed it made itself.
func SnapshotFailed(namespace, cluster, reason string) {
	snapshotFailures.WithLabelValues(namespace, cluster, reason).Inc()
}

// SetLastSnapshot records when the newest Complete snapshot of namespace/cluster completed and
// its artifact's size. A nil size (its EtcdSnapshot is gone, so the size is unknown) drops the
// size series, so that it never shows an older snapshot's size next to a newer time.
func SetLastSnapshot(namespace, cluster string, completedAt time.Time, size *int64) {
	snapshotLastSuccess.WithLabelValues(namespace, cluster).Set(float64(completedAt.Unix()))
	if size == nil {
		snapshotLastSize.DeleteLabelValues(namespace, cluster)
		return
	}
	snapshotLastSize.WithLabelValues(namespace, cluster).Set(float64(*size))
}

// ForgetSnapshots drops every backup series of a deleted cluster.
func ForgetSnapshots(namespace, cluster string) {
	labels := prometheus.Labels{"namespace": namespace, "cluster": cluster}
	snapshotLastSuccess.Delete(labels)
	snapshotLastSize.Delete(labels)
	snapshotDuration.Delete(labels)
	snapshotFailures.DeletePartialMatch(labels)
}
