package membership

import "fmt"

// ReasonRestoreFailed is the reason of Available=False, Degraded=True and Progressing=False
// while the seed of a cluster restored from a snapshot (spec.bootstrap.restore) cannot be
// restored: its restore init container failed, and says why in its termination message
// (docs/backup-restore.md, "Restore").
const ReasonRestoreFailed = "RestoreFailed"

// restoreFailed is the message of the RestoreFailed conditions: the seed and why its restore
// last failed; empty when no seed of a cluster still forming failed to restore. Only the
// bootstrap reads it: once the cluster has its ID, no Pod restores anything.
func restoreFailed(s *Scope) string {
	if s.ClusterID != "" {
		return ""
	}
	for _, m := range s.Members {
		if m.Bootstrap && m.RestoreFailure != "" {
			return fmt.Sprintf("seed %s could not be restored from the snapshot: %s; its restore init container runs again with back-off. "+
				"Fix the snapshot or its store, or recreate the cluster with another spec.bootstrap.restore (it is immutable)", m.Name, m.RestoreFailure)
		}
	}
	return ""
}
