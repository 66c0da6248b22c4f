package backup

import (
	"slices"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// failureReasons are the Ready reasons this package fails a snapshot with; the agent's own
// (snapshot.Reasons) come on top.
var failureReasons = []string{
	ReasonOperatorImageNotConfigured, ReasonClusterNotFound, ReasonClusterPaused, ReasonAuthLatchTimeout,
	ReasonSecretMissing, ReasonSnapshotJobLost, ReasonJobFailed, ReasonJobNameTaken,
}

// MetricReason is the reason label a failed snapshot is counted under
// (docs/backup-restore.md, "Metrics"): its Ready reason when that is one of the closed set the
// operator and its agent define, else snapshot.ReasonFailed. The agent's termination message
// is read as it comes, and a label taken from it unchecked would let any Pod that writes one
// add series.
func MetricReason(reason string) string {
	if slices.Contains(failureReasons, reason) || slices.Contains(snapshot.Reasons, snapshot.Reason(reason)) {
		return reason
	}
	return string(snapshot.ReasonFailed)
}
