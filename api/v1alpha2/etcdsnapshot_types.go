package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdSnapshotSpec asks for one snapshot of a cluster. It is immutable: take another snapshot by
// creating another EtcdSnapshot.
// +kubebuilder:validation:XValidation:rule="has(self.clusterRef.name) && size(self.clusterRef.name) > 0",message="spec.clusterRef.name must name an EtcdCluster in the snapshot's namespace"
type EtcdSnapshotSpec struct {
	// clusterRef names the EtcdCluster to snapshot, in the same namespace.
	// +required
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`

	// destination is where the snapshot file is written: exactly one of s3 or pvc.
	// +required
	Destination SnapshotLocation `json:"destination"`
}

// SnapshotPhase is where an EtcdSnapshot is in its life. Complete and Failed are final.
// +kubebuilder:validation:Enum=Pending;Started;Complete;Failed
type SnapshotPhase string

const (
	// SnapshotPhasePending means no snapshot Job has started yet.
	SnapshotPhasePending SnapshotPhase = "Pending"
	// SnapshotPhaseStarted means the snapshot Job is running.
	SnapshotPhaseStarted SnapshotPhase = "Started"
	// SnapshotPhaseComplete means the snapshot is stored and verified.
	SnapshotPhaseComplete SnapshotPhase = "Complete"
	// SnapshotPhaseFailed means the snapshot failed; see the Ready condition.
	SnapshotPhaseFailed SnapshotPhase = "Failed"
)

// SnapshotArtifact describes a stored snapshot file.
type SnapshotArtifact struct {
	// uri is where the file is: s3://bucket/key/name.db or pvc://claim/subPath/name.db.
	// +required
	URI string `json:"uri"`

	// sizeBytes is the file's size.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`

	// checksum is the file's digest, "sha256:<hex>", also written next to it as <name>.db.sha256.
	// +optional
	Checksum string `json:"checksum,omitempty"`

	// revision is the etcd revision at which the snapshot was taken.
	// +optional
	Revision int64 `json:"revision,omitempty"`

	// etcdVersion is the version of the etcd member that served the snapshot.
	// +optional
	EtcdVersion string `json:"etcdVersion,omitempty"`
}

// EtcdSnapshotStatus is the progress and result of a snapshot.
type EtcdSnapshotStatus struct {
	// phase is Pending, Started, Complete or Failed; Complete and Failed are final.
	// +optional
	Phase SnapshotPhase `json:"phase,omitempty"`

	// artifact is the stored file, once the snapshot is Complete.
	// +optional
	Artifact *SnapshotArtifact `json:"artifact,omitempty"`

	// startedAt is when the snapshot Job started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// completedAt is when the snapshot reached a final phase.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// conditions holds one condition, Ready, True only when Complete; its reason says why not.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdSnapshot is one snapshot of an EtcdCluster, written to S3 or a PVC. Deleting it leaves the
// snapshot file in place.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Size",type=integer,priority=1,JSONPath=`.status.artifact.sizeBytes`
type EtcdSnapshot struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says what to snapshot and where to put it. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="EtcdSnapshot spec is immutable; create a new EtcdSnapshot to take another snapshot"
	// +required
	Spec EtcdSnapshotSpec `json:"spec"`

	// status is the snapshot's progress and result.
	// +optional
	Status EtcdSnapshotStatus `json:"status,omitempty"`
}

// EtcdSnapshotList is a list of EtcdSnapshots.
//
// +kubebuilder:object:root=true
type EtcdSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdSnapshot `json:"items"`
}

// LastSnapshot is a cluster's newest stored snapshot.
type LastSnapshot struct {
	// name is the EtcdSnapshot.
	// +required
	Name string `json:"name"`

	// completedAt is when it completed.
	// +required
	CompletedAt metav1.Time `json:"completedAt"`

	// uri is where its file is.
	// +optional
	URI string `json:"uri,omitempty"`

	// revision is the etcd revision it holds.
	// +optional
	Revision int64 `json:"revision,omitempty"`
}
