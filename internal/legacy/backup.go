package legacy

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdBackup is the legacy one-off backup (later legacy releases only). Only the fields
// etcd-migrate carries over to an EtcdSnapshot are typed.
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdBackupSpec `json:"spec,omitempty"`
	Status BackupStatus   `json:"status,omitempty"`
}

// EtcdBackupSpec names the cluster and where the snapshot went.
type EtcdBackupSpec struct {
	ClusterRef  corev1.LocalObjectReference `json:"clusterRef"`
	Destination BackupDestination           `json:"destination"`
}

// BackupStatus is the conditions of a legacy backup or schedule.
type BackupStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdBackupSchedule is the legacy cron backup (later legacy releases only), run by a CronJob.
type EtcdBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdBackupScheduleSpec `json:"spec,omitempty"`
	Status BackupStatus           `json:"status,omitempty"`
}

// EtcdBackupScheduleSpec is the schedule of a legacy backup.
type EtcdBackupScheduleSpec struct {
	ClusterRef                 corev1.LocalObjectReference `json:"clusterRef"`
	Schedule                   string                      `json:"schedule"`
	Destination                BackupDestination           `json:"destination"`
	SuccessfulJobsHistoryLimit *int32                      `json:"successfulJobsHistoryLimit,omitempty"`
	FailedJobsHistoryLimit     *int32                      `json:"failedJobsHistoryLimit,omitempty"`
}

// BackupDestination is exactly one of S3 or PVC.
type BackupDestination struct {
	S3  *S3BackupDestination  `json:"s3,omitempty"`
	PVC *PVCBackupDestination `json:"pvc,omitempty"`
}

// S3BackupDestination is an object in an S3-compatible store. Unlike this project's snapshots,
// Key is the exact object key, not a prefix.
type S3BackupDestination struct {
	Endpoint             string                      `json:"endpoint"`
	Bucket               string                      `json:"bucket"`
	Key                  string                      `json:"key"`
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
	Region               string                      `json:"region,omitempty"`
	ForcePathStyle       bool                        `json:"forcePathStyle,omitempty"`
}

// PVCBackupDestination is a file on a PVC.
type PVCBackupDestination struct {
	ClaimName string `json:"claimName"`
	SubPath   string `json:"subPath,omitempty"`
}
