package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConcurrencyPolicy says what a policy does when a slot comes while its previous run is not
// final.
// +kubebuilder:validation:Enum=Allow;Forbid
type ConcurrencyPolicy string

const (
	// ConcurrencyAllow creates the slot's run anyway; it waits behind the earlier one, since a
	// cluster runs one defrag at a time.
	ConcurrencyAllow ConcurrencyPolicy = "Allow"
	// ConcurrencyForbid skips the slot.
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
)

// EtcdDefragPolicySpec creates an EtcdDefrag on a cron schedule.
// +kubebuilder:validation:XValidation:rule="has(self.clusterRef.name) && size(self.clusterRef.name) > 0",message="spec.clusterRef.name must name an EtcdCluster in the policy's namespace"
type EtcdDefragPolicySpec struct {
	// clusterRef names the EtcdCluster to defragment, in the same namespace.
	// +required
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`

	// schedule is a five-field cron expression (minute hour day-of-month month day-of-week),
	// read in UTC unless it starts with CRON_TZ=<IANA zone> and a space; the shorthands
	// @hourly, @daily, @midnight, @weekly, @monthly, @yearly and @annually are accepted too.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^(CRON_TZ=[A-Za-z0-9_+/-]+ +)?(@(hourly|daily|midnight|weekly|monthly|yearly|annually)|[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+)$')",message="spec.schedule must be five cron fields (minute hour day-of-month month day-of-week), optionally preceded by CRON_TZ=<IANA zone> and a space, such as 0 3 * * * or CRON_TZ=Europe/Berlin 0 3 * * 0"
	// +required
	Schedule string `json:"schedule"`

	// suspend, when true, stops creating runs; runs already created continue.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// concurrencyPolicy is Forbid (the default: skip a slot while the previous run is not
	// final) or Allow (create it; it waits its turn).
	// +kubebuilder:default=Forbid
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// startingDeadlineSeconds skips a slot that the operator noticed more than this many
	// seconds late (the operator was down, say). Unset: a missed slot runs however late, but
	// only the most recent missed slot.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// historyLimit is how many final runs the policy keeps; older ones are deleted. Unset
	// keeps 3.
	// +kubebuilder:validation:Minimum=0
	// +optional
	HistoryLimit *int32 `json:"historyLimit,omitempty"`

	// rule is copied verbatim into each run's spec.rule.
	// +optional
	Rule *DefragRule `json:"rule,omitempty"`

	// ttlSecondsAfterFinished is copied into each run's spec.ttlSecondsAfterFinished.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// EtcdDefragPolicyStatus is the policy's bookkeeping.
type EtcdDefragPolicyStatus struct {
	// lastScheduleTime is the slot of the most recent run the policy created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// lastSuccessfulTime is when the most recent Complete run completed.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// active are the policy's runs that are not final yet, sorted by name.
	// +listType=atomic
	// +optional
	Active []corev1.LocalObjectReference `json:"active,omitempty"`

	// conditions holds one condition, Ready: True while the schedule parses and the cluster
	// exists; its reason says what holds the policy otherwise.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdDefragPolicy creates an EtcdDefrag for a cluster on a cron schedule, named
// <policy>-<slot in Unix minutes> so that a slot gets at most one run.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Schedule",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdDefragPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which cluster, when and with which rule.
	// +required
	Spec EtcdDefragPolicySpec `json:"spec"`

	// status is the policy's bookkeeping.
	// +optional
	Status EtcdDefragPolicyStatus `json:"status,omitempty"`
}

// EtcdDefragPolicyList is a list of EtcdDefragPolicies.
//
// +kubebuilder:object:root=true
type EtcdDefragPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdDefragPolicy `json:"items"`
}
