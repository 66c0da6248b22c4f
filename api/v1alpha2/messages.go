package v1alpha2

// Messages returned by the CEL rules in this package's markers. controller-gen cannot read Go
// constants, so each marker repeats its text literally; TestMarkersUseMessageConstants checks that
// every constant here appears verbatim in the generated CRDs, and the CRD-validation suite asserts
// each one against a real API server. Rules 1–13 and F1–F5 keep the reference operator's wording,
// because users and tools may match on it.
const (
	// MsgMemoryPause is rule 1: a tmpfs cluster cannot be paused.
	MsgMemoryPause = "spec.replicas=0 with spec.storage.medium=Memory is unsupported: pausing a memory-backed cluster wedges on resume. Delete and recreate the cluster instead."
	// MsgMemorySize is rule 2: tmpfs needs a size limit.
	MsgMemorySize = "spec.storage.size must be > 0 when spec.storage.medium=Memory (the tmpfs sizeLimit cannot be zero)."
	// MsgTLSAddRemove is rule 3.
	MsgTLSAddRemove = "spec.tls cannot be added to or removed from an existing cluster; delete and recreate"
	// MsgTLSImmutable is rule 4.
	MsgTLSImmutable = "spec.tls is immutable post-create; delete and recreate the cluster to change TLS configuration (the one change allowed is a move from your own Secrets, spec.tls.client.serverSecretRef and spec.tls.peer.secretRef, to spec.tls.managed: {})"
	// MsgStorageClassAddRemove is rule 5.
	MsgStorageClassAddRemove = "spec.storage.storageClassName cannot be added to or removed from an existing cluster; delete and recreate"
	// MsgStorageClassImmutable is rule 6.
	MsgStorageClassImmutable = "spec.storage.storageClassName is immutable post-create (a PVC's storageClassName itself is immutable, and the operator does not roll PVCs); delete and recreate the cluster to change the StorageClass"
	// MsgAuthAddRemove is rule 7.
	MsgAuthAddRemove = "spec.auth cannot be added to or removed from an existing cluster; delete and recreate"
	// MsgAuthImmutable is rule 8.
	MsgAuthImmutable = "spec.auth is immutable post-create; delete and recreate the cluster to change auth configuration"
	// MsgAuthRequiresClientTLS is rule 9.
	MsgAuthRequiresClientTLS = "spec.auth.enabled requires spec.tls.client (auth credentials must not cross a plaintext connection)"
	// MsgAuthRequiresCredentialsRef is rule 10.
	MsgAuthRequiresCredentialsRef = "spec.auth.enabled requires spec.auth.rootCredentialsSecretRef" //nolint:gosec // G101: a validation message that names a field, not a credential
	// MsgBootstrapAddRemove is rule 11.
	MsgBootstrapAddRemove = "spec.bootstrap cannot be added to or removed from an existing cluster; it is consulted only at first bootstrap"
	// MsgBootstrapImmutable is rule 12.
	MsgBootstrapImmutable = "spec.bootstrap is immutable post-create; it is consulted only at first bootstrap"
	// MsgRestoreWithMemory is rule 13.
	MsgRestoreWithMemory = "spec.bootstrap.restore is unsupported with spec.storage.medium=Memory: the restored data dir is tmpfs, so any seed Pod restart re-restores the snapshot — reverting writes (single member) or breaking the cluster with a fresh ID it can't rejoin (multi-member). Use persistent storage to restore."
	// MsgStorageShrink is rule F1.
	MsgStorageShrink = "spec.storage.size cannot be shrunk"
	// MsgMediumImmutable is rule F2.
	MsgMediumImmutable = "spec.storage.medium is immutable; delete and recreate the cluster to change the storage backend"
	// MsgClientTLSOneSource is rule F3, first half.
	MsgClientTLSOneSource = "exactly one of spec.tls.client.serverSecretRef or spec.tls.client.certManager must be set"
	// MsgClientTLSOperatorWithCertManager is rule F3, second half.
	MsgClientTLSOperatorWithCertManager = "spec.tls.client.operatorClientSecretRef cannot be combined with certManager; use certManager.operatorClientIssuerRef"
	// MsgPeerTLSOneSource is rule F4.
	MsgPeerTLSOneSource = "exactly one of spec.tls.peer.secretRef or spec.tls.peer.certManager must be set"
	// MsgSnapshotLocationOneOf is rule F5 for any snapshot location (destination or restore source).
	MsgSnapshotLocationOneOf = "exactly one of destination.s3 or destination.pvc must be set"
	// MsgRestoreS3Key is rule F5 for an S3 restore source.
	MsgRestoreS3Key = "bootstrap.restore.source.s3.key must be the exact (non-empty) object key for a restore source"
	// MsgRestorePVCSubPath is rule F5 for a PVC restore source.
	MsgRestorePVCSubPath = "bootstrap.restore.source.pvc.subPath must be the exact (non-empty) snapshot file path for a restore source"

	// MsgVersionMajorFormat is rule 14 for a major-version change; arguments: old, new, old major.
	MsgVersionMajorFormat = "spec.version: changing the major version from %s to %s is not supported; stay on %s.x"
	// MsgVersionDowngradeFormat is rule 14 for a minor downgrade; arguments: old, new, current
	// minor, next minor.
	MsgVersionDowngradeFormat = "spec.version: %s to %s is a minor downgrade, which etcd does not support; allowed next versions: any %s.x patch, or %s.x"
	// MsgVersionSkipFormat is rule 14 for a skipped minor; arguments: old, new, next minor.
	MsgVersionSkipFormat = "spec.version: %s to %s skips a minor version; etcd upgrades one minor at a time, so set %s.x first"

	// MsgClientServiceReservedAnnotation is rule 16.
	MsgClientServiceReservedAnnotation = "spec.clientService.annotations must not use the reserved prefix etcd-operator.cozystack.io/; remove those keys"
	// MsgRunAsUserPositive is rule 17 for runAsUser.
	MsgRunAsUserPositive = "spec.podSecurityContext.runAsUser must be > 0 (Pod Security restricted forbids root); omit it to use 65532"
	// MsgRunAsGroupPositive is rule 17 for runAsGroup.
	MsgRunAsGroupPositive = "spec.podSecurityContext.runAsGroup must be > 0 (Pod Security restricted forbids group 0); omit it to use 65532"
	// MsgFSGroupPositive is rule 17 for fsGroup.
	MsgFSGroupPositive = "spec.podSecurityContext.fsGroup must be > 0 (Pod Security restricted forbids group 0); omit it to use 65532"
	// MsgSupplementalGroupsPositive is rule 17 for supplementalGroups.
	MsgSupplementalGroupsPositive = "spec.podSecurityContext.supplementalGroups must all be > 0 (Pod Security restricted forbids group 0); remove 0 and negative IDs"
	// MsgSELinuxRestricted is rule 17 for seLinuxOptions.
	MsgSELinuxRestricted = "spec.podSecurityContext.seLinuxOptions may set only level, and type container_t, container_init_t, container_kvm_t or container_engine_t (Pod Security restricted); remove user and role"
	// MsgClusterName rejects cluster names that cannot name the objects derived from them.
	MsgClusterName = "metadata.name of an EtcdCluster must be a DNS label of at most 56 characters that starts with a letter: it names the Services <name> and <name>-client and the members <name>-xxxxx, whose host names are limited to 63"
	// MsgRestoreChecksumFormat is rule 18.
	MsgRestoreChecksumFormat = "spec.bootstrap.restore.checksum must be sha256:<64 lowercase hex digits>, as in an EtcdSnapshot's status.artifact.checksum"

	// MsgReplicasMax is rule 19.
	MsgReplicasMax = "spec.replicas must be at most 7: etcd recommends at most 7 members, since every write waits for a majority of them; use 1, 3, 5 or 7"
	// MsgSnapshotCountMax is rule 20.
	MsgSnapshotCountMax = "spec.options.snapshotCount must be at most 100000 (etcd 3.5's default; 3.6 and later default to 10000): a longer interval keeps more raft log in memory and delays the 3.6 to 3.7 upgrade, which waits until every member has taken a snapshot; lower it, or leave it unset for etcd's default"
	// MsgRevisionRetention is rule 21.
	MsgRevisionRetention = "spec.options.autoCompactionRetention must be a revision count such as 1000 when spec.options.autoCompactionMode is revision: etcd would read a duration such as 1h as 3.6 trillion revisions and never compact; write an integer, or use autoCompactionMode periodic for a duration"
	// MsgStorageSizeFloor is rule 22.
	MsgStorageSizeFloor = "spec.storage.size must be at least 256Mi (the PVC request, or the tmpfs sizeLimit with medium Memory): etcd preallocates two 64 MB WAL segments next to its database, and the default quota of half the size must leave room for them; set 256Mi or more"
	// MsgQuotaExceedsStorage is rule 23.
	MsgQuotaExceedsStorage = "spec.options.quotaBackendBytes must not exceed spec.storage.size (0 means etcd's own default, 2 GiB): the volume would fill up before etcd raises its NOSPACE alarm; lower the quota, leave it unset for min(2 GiB, size/2), or grow spec.storage.size"
	// MsgAdditionalLabelKey is rule 24 for additionalMetadata.labels keys.
	MsgAdditionalLabelKey = "spec.additionalMetadata.labels has a key that is not a valid label key (an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, such as example.com/team); Kubernetes would refuse every object the operator creates with it, so fix or remove the key"
	// MsgAdditionalLabelValue is rule 24 for additionalMetadata.labels values.
	MsgAdditionalLabelValue = "spec.additionalMetadata.labels has a value that is not a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.' that start and end with a letter or digit); Kubernetes would refuse every object the operator creates with it, so fix the value"
	// MsgAdditionalAnnotationKey is rule 24 for additionalMetadata.annotations keys.
	MsgAdditionalAnnotationKey = "spec.additionalMetadata.annotations has a key that is not a valid annotation key (the form of a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, such as example.com/team); Kubernetes would refuse every object the operator creates with it, so fix or remove the key"
	// MsgAdditionalAnnotationsSize is rule 24 for the size of additionalMetadata.annotations.
	MsgAdditionalAnnotationsSize = "spec.additionalMetadata.annotations may hold at most 128 KiB of keys and values together: they are copied onto every Pod, PVC, Service and EtcdMember of the cluster, where Kubernetes allows 256 KiB of annotations in all, shared with the operator's own and other controllers'; shorten or remove some"
	// MsgNodeSelectorKey is rule 24 for nodeSelector keys.
	MsgNodeSelectorKey = "spec.nodeSelector has a key that is not a valid label key (an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, such as example.com/team); Kubernetes would refuse every member Pod with it, so fix or remove the key"
	// MsgNodeSelectorValue is rule 24 for nodeSelector values.
	MsgNodeSelectorValue = "spec.nodeSelector has a value that is not a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.' that start and end with a letter or digit); Kubernetes would refuse every member Pod with it, so fix the value"
	// MsgClientServiceAnnotationKey is rule 24 for clientService.annotations keys.
	MsgClientServiceAnnotationKey = "spec.clientService.annotations has a key that is not a valid annotation key (the form of a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, such as example.com/team); Kubernetes would refuse the client Service with it, so fix or remove the key"
	// MsgClientServiceAnnotationsSize is rule 24 for the size of clientService.annotations.
	MsgClientServiceAnnotationsSize = "spec.clientService.annotations may hold at most 64 KiB of keys and values together: the client Service also carries spec.additionalMetadata.annotations, and Kubernetes allows 256 KiB of annotations in all; shorten or remove some"
	// MsgClientServiceExposed is rule 25.
	MsgClientServiceExposed = "spec.clientService.type LoadBalancer or NodePort exposes etcd outside the cluster, which needs client TLS and authenticated clients: spec.tls.managed, or spec.tls.client with spec.auth.enabled or client certificates (spec.tls.client.operatorClientSecretRef or certManager.operatorClientIssuerRef); add them, use type ClusterIP, or set spec.clientService.allowUnauthenticated: true to accept an endpoint that anyone who reaches it can read and write"
	// MsgVersionTooOld is rule 26; its version is internal/version.Oldest (a test keeps them equal).
	MsgVersionTooOld = "spec.version must be 3.5.0 or later, the oldest etcd version the operator runs; choose a newer release"
	// MsgManagedTLSExclusive is rule 27.
	MsgManagedTLSExclusive = "spec.tls.managed cannot be combined with spec.tls.client or spec.tls.peer: with managed the operator issues the client and the peer certificates itself; remove client and peer, or remove managed"
	// MsgManagedTLSMoveNeedsTLS is rule 28: a move to spec.tls.managed keeps client and peer
	// TLS, it never turns a plaintext API to TLS.
	MsgManagedTLSMoveNeedsTLS = "spec.tls.managed can replace your own certificates only on a cluster with both client TLS (spec.tls.client.serverSecretRef) and peer TLS (spec.tls.peer.secretRef): a plaintext client or peer API cannot turn to TLS one member at a time; delete and recreate the cluster"

	// MsgSnapshotSpecImmutable rejects any change to an EtcdSnapshot's spec.
	MsgSnapshotSpecImmutable = "EtcdSnapshot spec is immutable; create a new EtcdSnapshot to take another snapshot"
	// MsgSnapshotClusterRefName rejects an EtcdSnapshot that names no cluster.
	MsgSnapshotClusterRefName = "spec.clusterRef.name must name an EtcdCluster in the snapshot's namespace"

	// MsgScheduleClusterRefName rejects an EtcdSnapshotSchedule that names no cluster.
	MsgScheduleClusterRefName = "spec.clusterRef.name must name an EtcdCluster in the schedule's namespace"
	// MsgScheduleCron rejects a snapshot schedule that is not five cron fields or a shorthand.
	MsgScheduleCron = "spec.schedule must be five cron fields (minute hour day-of-month month day-of-week) or a shorthand such as @daily, for example 0 2 * * *; name the time zone in spec.timeZone, not with CRON_TZ"
	// MsgScheduleTimeZone rejects a time zone that cannot be an IANA name.
	MsgScheduleTimeZone = "spec.timeZone must be an IANA time zone name such as UTC or Europe/Berlin"
	// MsgRetentionEmpty rejects a retention that keeps nothing explicitly.
	MsgRetentionEmpty = "spec.retention must set at least one of keepLast, keepDaily or keepWeekly; remove retention to keep every file"

	// MsgDefragClusterRefName rejects an EtcdDefrag that names no cluster.
	MsgDefragClusterRefName = "spec.clusterRef.name must name an EtcdCluster in the defrag's namespace"
	// MsgDefragSpecImmutable rejects a change of an EtcdDefrag's cluster or rule.
	MsgDefragSpecImmutable = "spec.clusterRef and spec.rule of an EtcdDefrag are immutable; create a new EtcdDefrag to defragment another cluster or with another rule"
	// MsgDefragRuleAllExclusive rejects rule.all combined with a threshold.
	MsgDefragRuleAllExclusive = "spec.rule.all: true selects every member and cannot be combined with freeSpaceAbove, quotaUsageAbove or minReclaim; remove the thresholds or set all: false"
	// MsgDefragMinReclaimNeedsQuota rejects rule.minReclaim without rule.quotaUsageAbove.
	MsgDefragMinReclaimNeedsQuota = "spec.rule.minReclaim applies only to quotaUsageAbove; set quotaUsageAbove too, or remove minReclaim"
	// MsgDefragMinReclaimAboveFreeSpace rejects rule.minReclaim larger than rule.freeSpaceAbove.
	MsgDefragMinReclaimAboveFreeSpace = "spec.rule.minReclaim must not exceed spec.rule.freeSpaceAbove (a member reclaiming freeSpaceAbove already qualifies); lower minReclaim"
	// MsgDefragFreeSpacePositive rejects a zero or negative rule.freeSpaceAbove.
	MsgDefragFreeSpacePositive = "spec.rule.freeSpaceAbove must be greater than 0, such as 200Mi"
	// MsgDefragMinReclaimPositive rejects a zero or negative rule.minReclaim.
	MsgDefragMinReclaimPositive = "spec.rule.minReclaim must be greater than 0, such as 32Mi"
	// MsgDefragPhaseFinal rejects a status.phase change away from Complete or Failed.
	MsgDefragPhaseFinal = "status.phase Complete and Failed are final; create a new EtcdDefrag to run again"
	// MsgDefragPolicyClusterRefName rejects an EtcdDefragPolicy that names no cluster.
	MsgDefragPolicyClusterRefName = "spec.clusterRef.name must name an EtcdCluster in the policy's namespace"
	// MsgDefragPolicySchedule rejects a schedule that is not five cron fields.
	MsgDefragPolicySchedule = "spec.schedule must be five cron fields (minute hour day-of-month month day-of-week), optionally preceded by CRON_TZ=<IANA zone> and a space, such as 0 3 * * * or CRON_TZ=Europe/Berlin 0 3 * * 0"
)
