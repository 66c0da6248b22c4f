package v1alpha2

// Label keys the operator sets on the objects it creates (docs/api.md, "Labels"). Services, the
// PodDisruptionBudget and status.selector select on LabelCluster, never on the generic
// app.kubernetes.io labels, so that helper Pods never become endpoints.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	LabelCluster   = "etcd-operator.cozystack.io/cluster"
	// LabelRole is set to RoleVoter on voting members' Pods only.
	LabelRole        = "etcd-operator.cozystack.io/role"
	LabelSnapshot    = "etcd-operator.cozystack.io/snapshot"
	LabelSnapshotFor = "etcd-operator.cozystack.io/snapshot-cluster"
	LabelSchedule    = "etcd-operator.cozystack.io/schedule"
	// LabelDefragPolicy names the EtcdDefragPolicy that created an EtcdDefrag.
	LabelDefragPolicy = "etcd-operator.cozystack.io/defrag-policy"

	// NameEtcd is the value of LabelName on member objects.
	NameEtcd = "etcd"
	// NameSnapshotAgent is the value of LabelName on snapshot Jobs and their Pods.
	NameSnapshotAgent = "etcd-snapshot-agent"
	// ManagedByOperator is the value of LabelManagedBy.
	ManagedByOperator = "etcd-operator"
	// RoleVoter is the value of LabelRole on voting members' Pods.
	RoleVoter = "voter"
)

// ReservedPrefix starts every label and annotation key the operator owns. Keys with it are dropped
// from additionalMetadata and rejected in clientService.annotations.
const ReservedPrefix = "etcd-operator.cozystack.io/"

// Annotation keys (docs/api.md, "Annotations").
const (
	AnnotationHeadlessServiceName = "etcd-operator.cozystack.io/headless-service-name"
	AnnotationDataDirSubPath      = "etcd-operator.cozystack.io/data-dir-subpath"
	AnnotationPeerAutoTLS         = "etcd-operator.cozystack.io/peer-auto-tls"
	AnnotationTemplateHash        = "etcd-operator.cozystack.io/template-hash"
	AnnotationMemberUID           = "etcd-operator.cozystack.io/member-uid"
	AnnotationClusterID           = "etcd-operator.cozystack.io/cluster-id"
	AnnotationRemovalReason       = "etcd-operator.cozystack.io/removal-reason"
	AnnotationAllowDeletion       = "etcd-operator.cozystack.io/allow-deletion"
	AnnotationReplace             = "etcd-operator.cozystack.io/replace"
	AnnotationRemoveFirst         = "etcd-operator.cozystack.io/remove-first"
	AnnotationPausedReplicas      = "etcd-operator.cozystack.io/paused-replicas"
	AnnotationAdoptionInProgress  = "etcd-operator.cozystack.io/adoption-in-progress"
	AnnotationApproveRecovery     = "etcd-operator.cozystack.io/approve-recovery"
	AnnotationMigratedFrom        = "etcd-operator.cozystack.io/migrated-from"
	// AnnotationForceNewCluster, on a member's Pod, asks the data-dir guard to restart etcd once
	// with --force-new-cluster; the value names the member's log exactly
	// (<clusterID>/<memberID>/<term>/<index>), so it does nothing anywhere else
	// (docs/design/quorum-recovery.md).
	AnnotationForceNewCluster = "etcd-operator.cozystack.io/force-new-cluster"
	// AnnotationRotateCA, on an EtcdCluster under spec.tls.managed, asks for a rotation of both
	// managed CAs; any value, each distinct value once (docs/tls.md, "CA rotation").
	AnnotationRotateCA = "etcd-operator.cozystack.io/rotate-ca"
	// AnnotationRotateCAHandled, on a managed CA Secret, is the last rotate-ca value that CA
	// rotated for (or was created under), so that a value is acted on once.
	AnnotationRotateCAHandled = "etcd-operator.cozystack.io/rotate-ca-handled"
	// AnnotationCALeavesReissuedAt, on a managed CA Secret during a rotation, is when every leaf
	// it signs was found re-issued by its new CA (RFC 3339): the old CA is dropped a while after.
	AnnotationCALeavesReissuedAt = "etcd-operator.cozystack.io/ca-leaves-reissued-at"
)

// FinalizerMemberCleanup holds an EtcdMember's deletion until the member has left etcd.
const FinalizerMemberCleanup = "etcd-operator.cozystack.io/member-cleanup"

// Condition types on EtcdCluster (docs/design/conditions-and-events.md).
const (
	ConditionAvailable   = "Available"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
)

// Condition types on EtcdMember and EtcdSnapshot (docs/api.md, "EtcdMember status and conditions",
// "EtcdSnapshot status").
const (
	ConditionReady          = "Ready"
	ConditionHealthy        = "Healthy"
	ConditionUpdated        = "Updated"
	ConditionVersionDrifted = "VersionDrifted"
)
