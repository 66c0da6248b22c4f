package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// StorageMedium selects where a member keeps its data directory.
// +kubebuilder:validation:Enum="";Memory
type StorageMedium string

const (
	// StorageMediumDefault keeps each member's data on its own PersistentVolumeClaim.
	StorageMediumDefault StorageMedium = ""
	// StorageMediumMemory keeps each member's data on a tmpfs emptyDir: fast, but lost with the Pod.
	StorageMediumMemory StorageMedium = "Memory"
)

// ReclaimPolicy says what happens to member PVCs when their EtcdCluster is deleted.
// +kubebuilder:validation:Enum=Delete;Retain
type ReclaimPolicy string

const (
	// ReclaimPolicyDelete lets the PVCs be garbage-collected with the EtcdCluster.
	ReclaimPolicyDelete ReclaimPolicy = "Delete"
	// ReclaimPolicyRetain keeps the PVCs after the EtcdCluster is gone.
	ReclaimPolicyRetain ReclaimPolicy = "Retain"
)

// StorageSpec describes each member's data directory.
type StorageSpec struct {
	// size is the capacity of each member's data directory: the PVC request, or the tmpfs
	// sizeLimit when medium is Memory. It may grow but never shrink. Growth expands existing
	// PVCs in place when their StorageClass allows volume expansion. (A pointer so that Go
	// clients that leave it unset get the API server's default instead of sending "0".)
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="spec.storage.size cannot be shrunk"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// medium is "" for one ReadWriteOnce PVC per member, or "Memory" for a tmpfs emptyDir whose
	// data dies with the Pod (lost members are replaced automatically while quorum holds).
	// Immutable: the medium is part of a cluster's identity.
	// +kubebuilder:default=""
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.storage.medium is immutable; delete and recreate the cluster to change the storage backend"
	// +optional
	Medium StorageMedium `json:"medium,omitempty"`

	// storageClassName is the StorageClass of member PVCs. Unset uses the default StorageClass;
	// "" turns dynamic provisioning off. Ignored for Memory. Cannot be added, removed or changed
	// after creation, because a PVC cannot move to another class.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// reclaimPolicy says what happens to member PVCs when the EtcdCluster is deleted: Delete lets
	// them be garbage-collected with it, Retain keeps them. Deleting an EtcdMember never deletes
	// its PVC. May be changed at any time.
	// +kubebuilder:default=Delete
	// +optional
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`
}

// LabelValue and AnnotationValue are aliases of string, so the maps that use them keep the Go
// type map[string]string. They exist for their schema bound: without a maxLength the API server
// prices a CEL check of a map value as if the value filled the whole request, and refuses the
// CRD (docs/api.md, rule 24). The Makefile's generate target explains the GODEBUG it needs.

// LabelValue is a label value: at most 63 characters.
// +kubebuilder:validation:MaxLength=63
type LabelValue = string

// AnnotationValue is an annotation value: at most 128 Ki characters, more than an annotation
// map of this API may hold in all.
// +kubebuilder:validation:MaxLength=131072
type AnnotationValue = string

// AdditionalMetadata is merged onto objects the operator creates for a cluster.
type AdditionalMetadata struct {
	// labels are added to member Pods, PVCs, both Services, the PodDisruptionBudget and
	// EtcdMembers: at most 64, each a valid label key and value. Keys with the prefix
	// etcd-operator.cozystack.io/ are ignored, and the operator's own labels win over these.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// annotations are added to the same objects as labels, with the same rules: at most 64
	// valid annotation keys, and 128 KiB of keys and values together. Changes are applied in
	// place, without restarting members.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Annotations map[string]AnnotationValue `json:"annotations,omitempty"`
}

// AutoCompactionMode is etcd's --auto-compaction-mode.
// +kubebuilder:validation:Enum=periodic;revision
type AutoCompactionMode string

const (
	// AutoCompactionPeriodic compacts history older than a duration.
	AutoCompactionPeriodic AutoCompactionMode = "periodic"
	// AutoCompactionRevision keeps a number of revisions.
	AutoCompactionRevision AutoCompactionMode = "revision"
)

// EtcdOptions is the closed set of etcd flags the operator lets users tune. Changes roll to
// running members one at a time.
type EtcdOptions struct {
	// quotaBackendBytes is etcd's --quota-backend-bytes: the database size at which etcd raises
	// a NOSPACE alarm and refuses writes. Unset means min(2 GiB, storage.size / 2), so that a
	// small disk raises the alarm before it fills. 0 means etcd's own default, 2 GiB. Neither
	// may exceed storage.size, or the disk fills before the alarm can fire. At most 1 TiB:
	// etcd maps the whole quota at start, and a quota far beyond that (about 232 TiB) cannot be
	// mapped, so etcd would never start; etcd itself recommends at most 8 GiB.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1099511627776
	// +optional
	QuotaBackendBytes *int64 `json:"quotaBackendBytes,omitempty"`

	// autoCompactionMode is etcd's --auto-compaction-mode: "periodic" or "revision".
	// +optional
	AutoCompactionMode AutoCompactionMode `json:"autoCompactionMode,omitempty"`

	// autoCompactionRetention is etcd's --auto-compaction-retention. In periodic mode (etcd's
	// default) it is a duration such as "5m" or "1h30m", or an integer meaning hours; in
	// revision mode it is a revision count such as "1000", and a duration is refused (etcd would
	// read "1h" as 3.6×10¹² revisions).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$|^[0-9]+$`
	// +optional
	AutoCompactionRetention string `json:"autoCompactionRetention,omitempty"`

	// snapshotCount is etcd's --snapshot-count: committed transactions between raft snapshots.
	// Unset means etcd's default (100000 up to 3.5, 10000 from 3.6). At most 100000: etcd keeps
	// the log since the last snapshot in memory, and the step from 3.6 to 3.7 waits until every
	// member has taken a snapshot.
	// +kubebuilder:validation:Minimum=1
	// +optional
	SnapshotCount *int64 `json:"snapshotCount,omitempty"`
}

// PodSecurityOverrides narrows the operator's restricted Pod security context. Only fields that
// cannot weaken Pod Security "restricted" are offered: runAsNonRoot, a RuntimeDefault seccomp
// profile, no privilege escalation, dropping ALL capabilities and not mounting a service account
// token are always set.
// +kubebuilder:validation:XValidation:rule="!has(self.runAsUser) || self.runAsUser > 0",message="spec.podSecurityContext.runAsUser must be > 0 (Pod Security restricted forbids root); omit it to use 65532"
// +kubebuilder:validation:XValidation:rule="!has(self.runAsGroup) || self.runAsGroup > 0",message="spec.podSecurityContext.runAsGroup must be > 0 (Pod Security restricted forbids group 0); omit it to use 65532"
// +kubebuilder:validation:XValidation:rule="!has(self.fsGroup) || self.fsGroup > 0",message="spec.podSecurityContext.fsGroup must be > 0 (Pod Security restricted forbids group 0); omit it to use 65532"
// +kubebuilder:validation:XValidation:rule="!has(self.supplementalGroups) || self.supplementalGroups.all(g, g > 0)",message="spec.podSecurityContext.supplementalGroups must all be > 0 (Pod Security restricted forbids group 0); remove 0 and negative IDs"
// +kubebuilder:validation:XValidation:rule="!has(self.seLinuxOptions) || ((!has(self.seLinuxOptions.user) || size(self.seLinuxOptions.user) == 0) && (!has(self.seLinuxOptions.role) || size(self.seLinuxOptions.role) == 0) && (!has(self.seLinuxOptions.type) || size(self.seLinuxOptions.type) == 0 || self.seLinuxOptions.type in ['container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']))",message="spec.podSecurityContext.seLinuxOptions may set only level, and type container_t, container_init_t, container_kvm_t or container_engine_t (Pod Security restricted); remove user and role"
type PodSecurityOverrides struct {
	// runAsUser is the UID etcd runs as. Default 65532.
	// +optional
	RunAsUser *int64 `json:"runAsUser,omitempty"`

	// runAsGroup is the primary GID etcd runs as. Default 65532.
	// +optional
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`

	// fsGroup owns the data volume. Default 65532.
	// +optional
	FSGroup *int64 `json:"fsGroup,omitempty"`

	// fsGroupChangePolicy is "OnRootMismatch" (default: chown the volume only when its root
	// does not already match) or "Always".
	// +kubebuilder:validation:Enum=OnRootMismatch;Always
	// +optional
	FSGroupChangePolicy *corev1.PodFSGroupChangePolicy `json:"fsGroupChangePolicy,omitempty"`

	// supplementalGroups are extra GIDs for the etcd process.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	SupplementalGroups []int64 `json:"supplementalGroups,omitempty"`

	// seLinuxOptions is the SELinux context of the etcd container. Pod Security "restricted"
	// allows only a level and the container_t family of types.
	// +optional
	SELinuxOptions *corev1.SELinuxOptions `json:"seLinuxOptions,omitempty"`
}

// SnapshotLocation is where a snapshot is written to, or restored from: exactly one of s3 or pvc.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.pvc)",message="exactly one of destination.s3 or destination.pvc must be set"
type SnapshotLocation struct {
	// s3 is an object in an S3-compatible store.
	// +optional
	S3 *S3SnapshotLocation `json:"s3,omitempty"`

	// pvc is a file on a PersistentVolumeClaim in the same namespace.
	// +optional
	PVC *PVCSnapshotLocation `json:"pvc,omitempty"`
}

// S3SnapshotLocation is a location in an S3-compatible object store.
type S3SnapshotLocation struct {
	// endpoint is the S3 endpoint URL, for example https://s3.amazonaws.com or a MinIO URL.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +required
	Endpoint string `json:"endpoint"`

	// bucket is the bucket name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +required
	Bucket string `json:"bucket"`

	// key is, for a snapshot destination, an optional prefix: the object is written to
	// <key>/<snapshot-name>.db. For a restore source it is the exact object key.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Key string `json:"key,omitempty"`

	// credentialsSecretRef names a Secret in the same namespace with the keys
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. The credentials need ListBucket as well, so
	// that a missing object can be told apart from a denied one.
	// +required
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`

	// region is the bucket's region. Default us-east-1.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Region string `json:"region,omitempty"`

	// forcePathStyle puts the bucket in the URL path instead of the host name, as MinIO and Ceph
	// usually need.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`

	// caSecretRef names a Secret in the same namespace whose key ca.crt holds the CA
	// certificates (PEM) that the endpoint's certificate is verified with, for a store whose
	// certificate a private CA signed. Unset: the system's trusted roots.
	// +optional
	CASecretRef *corev1.LocalObjectReference `json:"caSecretRef,omitempty"`
}

// PVCSnapshotLocation is a location on a PersistentVolumeClaim.
type PVCSnapshotLocation struct {
	// claimName is a PersistentVolumeClaim in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ClaimName string `json:"claimName"`

	// subPath is, for a snapshot destination, an optional directory: the file is written to
	// <subPath>/<snapshot-name>.db. For a restore source it is the exact file path.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// RestoreSpec names the snapshot a new cluster's seed member is restored from.
// +kubebuilder:validation:XValidation:rule="!has(self.source.s3) || (has(self.source.s3.key) && size(self.source.s3.key) > 0)",message="bootstrap.restore.source.s3.key must be the exact (non-empty) object key for a restore source"
// +kubebuilder:validation:XValidation:rule="!has(self.source.pvc) || (has(self.source.pvc.subPath) && size(self.source.pvc.subPath) > 0)",message="bootstrap.restore.source.pvc.subPath must be the exact (non-empty) snapshot file path for a restore source"
type RestoreSpec struct {
	// source is the snapshot to restore: one exact S3 object or one exact file on a PVC.
	// +required
	Source SnapshotLocation `json:"source"`

	// checksum is the snapshot's expected digest, "sha256:<hex>". When unset, the <file>.sha256
	// sidecar written next to the snapshot is used if present. A mismatch fails the restore
	// before any data is written.
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:XValidation:rule="self.matches('^sha256:[0-9a-f]{64}$')",message="spec.bootstrap.restore.checksum must be sha256:<64 lowercase hex digits>, as in an EtcdSnapshot's status.artifact.checksum"
	// +optional
	Checksum string `json:"checksum,omitempty"`
}
