package defrag

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// Record returns ms with member name's outcome set: Defragmented with the sizes before and
// after, or Failed (or Skipped) with reason. The list is copied, never modified.
func Record(ms []etcdv1alpha2.DefragMemberStatus, name string, outcome etcdv1alpha2.DefragOutcome, before, after int64, reason string, now time.Time) []etcdv1alpha2.DefragMemberStatus {
	out := slices.Clone(ms)
	i := slices.IndexFunc(out, func(s etcdv1alpha2.DefragMemberStatus) bool { return s.Name == name })
	if i < 0 {
		return out
	}
	t := metav1.NewTime(now)
	s := out[i]
	s.Outcome, s.Reason, s.FinishedAt = outcome, reason, &t
	if before > 0 {
		s.DBSizeBefore = before
	}
	if outcome == etcdv1alpha2.DefragOutcomeDefragmented {
		s.DBSizeAfter = after
		s.ReclaimedBytes = max(0, s.DBSizeBefore-after)
	}
	out[i] = s
	return out
}

// SkipPending returns ms with every Pending member Skipped for reason: the run ended first.
func SkipPending(ms []etcdv1alpha2.DefragMemberStatus, reason string, now time.Time) []etcdv1alpha2.DefragMemberStatus {
	out := slices.Clone(ms)
	t := metav1.NewTime(now)
	for i := range out {
		if out[i].Outcome == etcdv1alpha2.DefragOutcomePending {
			out[i].Outcome, out[i].Reason, out[i].FinishedAt = etcdv1alpha2.DefragOutcomeSkipped, reason, &t
		}
	}
	return out
}

// Defragmented counts the Defragmented members (status.defragmented).
func Defragmented(ms []etcdv1alpha2.DefragMemberStatus) int32 {
	return int32(len(outcomes(ms, etcdv1alpha2.DefragOutcomeDefragmented))) //nolint:gosec // G115: a cluster has at most 7 members
}

// Final reports whether phase is Complete or Failed.
func Final(phase etcdv1alpha2.DefragPhase) bool {
	return phase == etcdv1alpha2.DefragPhaseComplete || phase == etcdv1alpha2.DefragPhaseFailed
}
