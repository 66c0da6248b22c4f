package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefragRule says which members of a cluster a defrag run defragments. With no field set, a
// member qualifies when it could reclaim more than 200Mi (freeSpaceAbove's default). The
// thresholds combine with "or": a member qualifies when any threshold that is set says so.
// +kubebuilder:validation:XValidation:rule="!has(self.all) || !self.all || (!has(self.freeSpaceAbove) && !has(self.quotaUsageAbove) && !has(self.minReclaim))",message="spec.rule.all: true selects every member and cannot be combined with freeSpaceAbove, quotaUsageAbove or minReclaim; remove the thresholds or set all: false"
// +kubebuilder:validation:XValidation:rule="!has(self.minReclaim) || has(self.quotaUsageAbove)",fieldPath=".minReclaim",message="spec.rule.minReclaim applies only to quotaUsageAbove; set quotaUsageAbove too, or remove minReclaim"
// +kubebuilder:validation:XValidation:rule="!has(self.minReclaim) || !has(self.freeSpaceAbove) || !quantity(string(self.minReclaim)).isGreaterThan(quantity(string(self.freeSpaceAbove)))",fieldPath=".minReclaim",message="spec.rule.minReclaim must not exceed spec.rule.freeSpaceAbove (a member reclaiming freeSpaceAbove already qualifies); lower minReclaim"
type DefragRule struct {
	// all, when true, defragments every member whatever its database looks like. It cannot be
	// combined with the thresholds.
	// +optional
	All bool `json:"all,omitempty"`

	// freeSpaceAbove qualifies a member whose reclaimable space (dbSize − dbSizeInUse, what a
	// defragmentation frees) is above it. Must be > 0. When no field of the rule is set it
	// defaults to 200Mi; when quotaUsageAbove is set and this is not, only quotaUsageAbove
	// applies.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.rule.freeSpaceAbove must be greater than 0, such as 200Mi"
	// +optional
	FreeSpaceAbove *resource.Quantity `json:"freeSpaceAbove,omitempty"`

	// quotaUsageAbove qualifies a member whose database file uses more than this share of the
	// cluster's backend quota, written as a percentage from 1% to 100%, such as "80%", provided
	// the defragmentation would reclaim at least minReclaim.
	// +kubebuilder:validation:Pattern=`^([1-9][0-9]?|100)%$`
	// +optional
	QuotaUsageAbove string `json:"quotaUsageAbove,omitempty"`

	// minReclaim is the least a member qualifying by quotaUsageAbove must be able to reclaim;
	// below it the member is skipped, since the defragmentation would not lower its usage
	// enough to matter. Must be > 0 and at most freeSpaceAbove; requires quotaUsageAbove.
	// Defaults to 32Mi when quotaUsageAbove is set.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.rule.minReclaim must be greater than 0, such as 32Mi"
	// +optional
	MinReclaim *resource.Quantity `json:"minReclaim,omitempty"`
}

// EtcdDefragSpec asks for one defragmentation run over a cluster's members.
// +kubebuilder:validation:XValidation:rule="has(self.clusterRef.name) && size(self.clusterRef.name) > 0",message="spec.clusterRef.name must name an EtcdCluster in the defrag's namespace"
// +kubebuilder:validation:XValidation:rule="self.clusterRef == oldSelf.clusterRef && has(self.rule) == has(oldSelf.rule) && (!has(self.rule) || self.rule == oldSelf.rule)",message="spec.clusterRef and spec.rule of an EtcdDefrag are immutable; create a new EtcdDefrag to defragment another cluster or with another rule"
type EtcdDefragSpec struct {
	// clusterRef names the EtcdCluster to defragment, in the same namespace. Immutable.
	// +required
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`

	// rule says which members qualify. Absent means freeSpaceAbove: 200Mi. Immutable.
	// +optional
	Rule *DefragRule `json:"rule,omitempty"`

	// ttlSecondsAfterFinished, when set, deletes the EtcdDefrag this many seconds after it
	// reached Complete or Failed.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// DefragPhase is where an EtcdDefrag is in its life. Complete and Failed are final.
// +kubebuilder:validation:Enum=Pending;Running;Complete;Failed
type DefragPhase string

const (
	// DefragPhasePending means the run waits for its turn: another run of the cluster, or the
	// cluster to converge. See the Ready condition.
	DefragPhasePending DefragPhase = "Pending"
	// DefragPhaseRunning means members are being defragmented, one at a time.
	DefragPhaseRunning DefragPhase = "Running"
	// DefragPhaseComplete means every qualifying member was defragmented.
	DefragPhaseComplete DefragPhase = "Complete"
	// DefragPhaseFailed means at least one member failed, or the run's deadline passed.
	DefragPhaseFailed DefragPhase = "Failed"
)

// DefragRole is a member's raft role when the run started.
// +kubebuilder:validation:Enum=leader;follower
type DefragRole string

const (
	// DefragRoleLeader is the member that led the cluster when the run started; it goes last,
	// after leadership moved away from it.
	DefragRoleLeader DefragRole = "leader"
	// DefragRoleFollower is every other voter.
	DefragRoleFollower DefragRole = "follower"
)

// DefragOutcome is what the run did with one member.
// +kubebuilder:validation:Enum=Pending;Skipped;Defragmented;Failed
type DefragOutcome string

const (
	// DefragOutcomePending means the member qualifies and waits for its turn.
	DefragOutcomePending DefragOutcome = "Pending"
	// DefragOutcomeSkipped means the rule did not select the member, or the run ended first.
	DefragOutcomeSkipped DefragOutcome = "Skipped"
	// DefragOutcomeDefragmented means the member was defragmented.
	DefragOutcomeDefragmented DefragOutcome = "Defragmented"
	// DefragOutcomeFailed means the member's defragmentation returned an error.
	DefragOutcomeFailed DefragOutcome = "Failed"
)

// DefragMemberStatus is one member's part of a run.
type DefragMemberStatus struct {
	// name is the EtcdMember's name.
	// +required
	Name string `json:"name"`

	// role is the member's raft role when the run started: leader or follower.
	// +optional
	Role DefragRole `json:"role,omitempty"`

	// outcome is Pending, Skipped, Defragmented or Failed.
	// +required
	Outcome DefragOutcome `json:"outcome"`

	// reason says why the member was skipped or failed, or what the rule saw.
	// +optional
	Reason string `json:"reason,omitempty"`

	// dbSizeBefore is the member's database file size in bytes before its defragmentation (or
	// when it was evaluated).
	// +optional
	DBSizeBefore int64 `json:"dbSizeBefore,omitempty"`

	// dbSizeAfter is the member's database file size in bytes after its defragmentation.
	// +optional
	DBSizeAfter int64 `json:"dbSizeAfter,omitempty"`

	// reclaimedBytes is dbSizeBefore − dbSizeAfter.
	// +optional
	ReclaimedBytes int64 `json:"reclaimedBytes,omitempty"`

	// finishedAt is when the member's outcome became final.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// EtcdDefragStatus is the progress and result of a run.
type EtcdDefragStatus struct {
	// phase is Pending, Running, Complete or Failed; Complete and Failed are final.
	// +kubebuilder:validation:XValidation:rule="(oldSelf != 'Complete' && oldSelf != 'Failed') || self == oldSelf",message="status.phase Complete and Failed are final; create a new EtcdDefrag to run again"
	// +optional
	Phase DefragPhase `json:"phase,omitempty"`

	// startedAt is when the run started defragmenting (left Pending).
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// completedAt is when the run reached a final phase.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// defragmented counts the members defragmented.
	// +optional
	Defragmented int32 `json:"defragmented,omitempty"`

	// members is each member's outcome, by name.
	// +listType=map
	// +listMapKey=name
	// +optional
	Members []DefragMemberStatus `json:"members,omitempty"`

	// conditions holds one condition, Ready: True once Complete; its reason says why not.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdDefrag is one defragmentation run over an EtcdCluster's members: followers first, the
// leader last, one member at a time, each only when the cluster keeps its quorum without it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Defragmented",type=integer,JSONPath=`.status.defragmented`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdDefrag struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which cluster and which members.
	// +required
	Spec EtcdDefragSpec `json:"spec"`

	// status is the run's progress and result.
	// +optional
	Status EtcdDefragStatus `json:"status,omitempty"`
}

// EtcdDefragList is a list of EtcdDefrags.
//
// +kubebuilder:object:root=true
type EtcdDefragList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdDefrag `json:"items"`
}
