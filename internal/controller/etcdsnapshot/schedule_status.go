package etcdsnapshot

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/retention"
)

// Schedule Ready reasons (docs/api.md, "EtcdSnapshotSchedule").
const (
	ReasonScheduled          = "Scheduled"
	ReasonSuspended          = "Suspended"
	ReasonInvalidSchedule    = "InvalidSchedule"
	ReasonClusterNotFound    = "ClusterNotFound"
	ReasonLastRunFailed      = "LastRunFailed"
	ReasonSnapshotNotCreated = "SnapshotNotCreated"
)

// finalSnapshot reports whether a snapshot's phase is one it never leaves.
func finalSnapshot(p etcdv1alpha2.SnapshotPhase) bool {
	return p == etcdv1alpha2.SnapshotPhaseComplete || p == etcdv1alpha2.SnapshotPhaseFailed
}

func activeCount(snapshots []etcdv1alpha2.EtcdSnapshot) int {
	n := 0
	for _, s := range snapshots {
		if !finalSnapshot(s.Status.Phase) {
			n++
		}
	}
	return n
}

// historyEntry is what the history limits read of a snapshot.
func historyEntry(s *etcdv1alpha2.EtcdSnapshot) retention.Object {
	done := s.CreationTimestamp.Time
	if s.Status.CompletedAt != nil {
		done = s.Status.CompletedAt.Time
	}
	return retention.Object{Name: s.Name, Final: finalSnapshot(s.Status.Phase), Succeeded: s.Status.Phase == etcdv1alpha2.SnapshotPhaseComplete, Done: done}
}

// newer orders final snapshots by when they finished, then by name.
func newer(a, b retention.Object) bool {
	return a.Done.After(b.Done) || (a.Done.Equal(b.Done) && a.Name > b.Name)
}

// summarise fills active and lastSuccessfulTime from the snapshots, and turns Ready False when
// the newest final snapshot failed: a schedule that runs but stores nothing must not look fine.
func summarise(status *etcdv1alpha2.EtcdSnapshotScheduleStatus, s *etcdv1alpha2.EtcdSnapshotSchedule, snapshots []etcdv1alpha2.EtcdSnapshot) {
	status.Active = nil
	var last *etcdv1alpha2.EtcdSnapshot
	for i := range snapshots {
		snap := &snapshots[i]
		if !finalSnapshot(snap.Status.Phase) {
			status.Active = append(status.Active, corev1.LocalObjectReference{Name: snap.Name})
			continue
		}
		if snap.Status.Phase == etcdv1alpha2.SnapshotPhaseComplete && snap.Status.CompletedAt != nil &&
			(status.LastSuccessfulTime == nil || status.LastSuccessfulTime.Before(snap.Status.CompletedAt)) {
			status.LastSuccessfulTime = snap.Status.CompletedAt.DeepCopy()
		}
		if last == nil || newer(historyEntry(snap), historyEntry(last)) {
			last = snap
		}
	}
	slices.SortFunc(status.Active, func(a, b corev1.LocalObjectReference) int { return strings.Compare(a.Name, b.Name) })
	ready := meta.FindStatusCondition(status.Conditions, etcdv1alpha2.ConditionReady)
	if last == nil || last.Status.Phase != etcdv1alpha2.SnapshotPhaseFailed || ready == nil || ready.Status != metav1.ConditionTrue {
		return
	}
	why := "see its status"
	if c := meta.FindStatusCondition(last.Status.Conditions, etcdv1alpha2.ConditionReady); c != nil {
		why = c.Reason + ": " + c.Message
	}
	setScheduleReady(status, s, metav1.ConditionFalse, ReasonLastRunFailed,
		fmt.Sprintf("the last snapshot, EtcdSnapshot %s, failed (%s); %s", last.Name, why, ready.Message))
}

func setScheduleReady(status *etcdv1alpha2.EtcdSnapshotScheduleStatus, s *etcdv1alpha2.EtcdSnapshotSchedule, st metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionReady, Status: st, Reason: reason, Message: msg, ObservedGeneration: s.Generation})
}
