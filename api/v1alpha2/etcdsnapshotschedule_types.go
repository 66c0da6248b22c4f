package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdSnapshotScheduleSpec takes an EtcdSnapshot of a cluster on a cron schedule and prunes the
// snapshot files it wrote (docs/backup-restore.md).
type EtcdSnapshotScheduleSpec struct {
	// clusterRef names the EtcdCluster to snapshot, in the same namespace.
	// +kubebuilder:validation:XValidation:rule="has(self.name) && size(self.name) > 0",message="spec.clusterRef.name must name an EtcdCluster in the schedule's namespace"
	// +required
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`

	// schedule is a cron expression of five fields (minute, hour, day of month, month, day of
	// week), as in a Kubernetes CronJob, for example "0 2 * * *" for 02:00 every day, read in
	// timeZone. The shorthands @hourly, @daily, @midnight, @weekly, @monthly, @yearly and
	// @annually are accepted too.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(hourly|daily|midnight|weekly|monthly|yearly|annually)|[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+)$')",message="spec.schedule must be five cron fields (minute hour day-of-month month day-of-week) or a shorthand such as @daily, for example 0 2 * * *; name the time zone in spec.timeZone, not with CRON_TZ"
	// +required
	Schedule string `json:"schedule"`

	// timeZone is the IANA time zone the schedule is read in, for example "Europe/Berlin".
	// Default UTC.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$')",message="spec.timeZone must be an IANA time zone name such as UTC or Europe/Berlin"
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`

	// destination is where each snapshot is written; it is copied into every EtcdSnapshot.
	// +required
	Destination SnapshotLocation `json:"destination"`

	// suspend stops new runs; running snapshots finish. Runs missed while suspended are not
	// made up for.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// concurrencyPolicy is Forbid (default: skip a run while the previous snapshot has not
	// finished) or Allow.
	// +kubebuilder:default=Forbid
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// startingDeadlineSeconds is how late a run may start, for example after the operator was
	// down: a run missed by more is skipped. Unset means the latest missed run always starts.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// successfulSnapshotsHistoryLimit is how many Complete EtcdSnapshot objects are kept.
	// Objects only: their files are kept or pruned by retention. Default 7.
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=0
	// +optional
	SuccessfulSnapshotsHistoryLimit *int32 `json:"successfulSnapshotsHistoryLimit,omitempty"`

	// failedSnapshotsHistoryLimit is how many Failed EtcdSnapshot objects are kept. Default 3.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailedSnapshotsHistoryLimit *int32 `json:"failedSnapshotsHistoryLimit,omitempty"`

	// retention prunes the snapshot files this schedule wrote to its destination. Unset keeps
	// every file.
	// +optional
	Retention *SnapshotRetention `json:"retention,omitempty"`
}

// SnapshotRetention says which of a schedule's snapshot files to keep; every other file the
// schedule wrote is deleted after each successful snapshot. A file is kept when any rule keeps
// it. Files that the schedule did not write are never touched.
// +kubebuilder:validation:XValidation:rule="has(self.keepLast) || has(self.keepDaily) || has(self.keepWeekly)",message="spec.retention must set at least one of keepLast, keepDaily or keepWeekly; remove retention to keep every file"
type SnapshotRetention struct {
	// keepLast keeps the newest N files.
	// +kubebuilder:validation:Minimum=1
	// +optional
	KeepLast *int32 `json:"keepLast,omitempty"`

	// keepDaily keeps the newest file of each of the last N days that have one, in the
	// schedule's time zone.
	// +kubebuilder:validation:Minimum=1
	// +optional
	KeepDaily *int32 `json:"keepDaily,omitempty"`

	// keepWeekly keeps the newest file of each of the last N ISO weeks that have one, in the
	// schedule's time zone.
	// +kubebuilder:validation:Minimum=1
	// +optional
	KeepWeekly *int32 `json:"keepWeekly,omitempty"`
}

// EtcdSnapshotScheduleStatus is a schedule's bookkeeping.
type EtcdSnapshotScheduleStatus struct {
	// lastScheduleTime is the slot of the latest EtcdSnapshot the schedule created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// lastSuccessfulTime is when the latest of its snapshots completed.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// active lists the schedule's snapshots that have not finished.
	// +listType=atomic
	// +optional
	Active []corev1.LocalObjectReference `json:"active,omitempty"`

	// conditions holds Ready: True while runs are scheduled; its reason says why not.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdSnapshotSchedule takes EtcdSnapshots of a cluster on a cron schedule and keeps a bounded
// history of them and of their files.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdSnapshotSchedule struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says when to snapshot which cluster, where to, and what to keep.
	// +required
	Spec EtcdSnapshotScheduleSpec `json:"spec"`

	// status is the schedule's bookkeeping.
	// +optional
	Status EtcdSnapshotScheduleStatus `json:"status,omitempty"`
}

// EtcdSnapshotScheduleList is a list of EtcdSnapshotSchedules.
//
// +kubebuilder:object:root=true
type EtcdSnapshotScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdSnapshotSchedule `json:"items"`
}
