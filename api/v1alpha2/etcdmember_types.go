package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdMemberSpec is one etcd member's template, written by the EtcdCluster controller.
type EtcdMemberSpec struct {
	// clusterName is the parent EtcdCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ClusterName string `json:"clusterName"`

	// version is the etcd version this member runs; it changes during rolling upgrades.
	// +kubebuilder:validation:Pattern=`^\d+\.\d+\.\d+$`
	// +kubebuilder:validation:MaxLength=32
	// +required
	Version string `json:"version"`

	// storage is copied from the cluster's latched target; size grows with PVC expansion.
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// resources are the etcd container's requests and limits.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// affinity is the Pod's affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// topologySpreadConstraints are the Pod's spread constraints.
	// +listType=atomic
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// options are the typed etcd flags.
	// +optional
	Options *EtcdOptions `json:"options,omitempty"`

	// imagePullSecrets are used at the next Pod creation.
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// additionalMetadata is merged onto the Pod and PVC in place.
	// +optional
	AdditionalMetadata *AdditionalMetadata `json:"additionalMetadata,omitempty"`

	// nodeSelector is the Pod's node selector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations are the Pod's tolerations.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// priorityClassName is the Pod's PriorityClass.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// podSecurityContext narrows the Pod's restricted security context.
	// +optional
	PodSecurityContext *PodSecurityOverrides `json:"podSecurityContext,omitempty"`

	// bootstrap is true only on the seed member that founded the cluster; it is never cleared.
	// +optional
	Bootstrap bool `json:"bootstrap,omitempty"`

	// initialCluster is etcd's --initial-cluster. Empty means the member has not been added
	// to etcd yet, and no Pod is created until it is set.
	// +required
	InitialCluster string `json:"initialCluster"`

	// clusterToken is etcd's --initial-cluster-token, copied from the cluster's status.
	// +required
	ClusterToken string `json:"clusterToken"`

	// replicas is always 1. It exists only so that PodDisruptionBudgets with maxUnavailable or
	// percentages can resolve member Pods through the /scale subresource.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// dormant pauses the member: its Pod is deleted while its PVC and member ID are kept.
	// +optional
	Dormant bool `json:"dormant,omitempty"`

	// tls says which Secrets the member's Pod mounts and which TLS flags etcd gets.
	// +optional
	TLS *EtcdMemberTLS `json:"tls,omitempty"`

	// restore, on the seed only, restores its data directory from a snapshot while the
	// cluster has no cluster ID yet.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// EtcdMemberTLS is the part of the cluster's TLS configuration a member's Pod needs. Secret
// names are the same whether the Secret is yours or cert-manager's.
type EtcdMemberTLS struct {
	// clientServerSecretRef is the client API server certificate Secret. Unset means a
	// plaintext client API.
	// +optional
	ClientServerSecretRef *corev1.LocalObjectReference `json:"clientServerSecretRef,omitempty"`

	// clientMTLS starts etcd with --client-cert-auth and the Secret's ca.crt as trusted CA.
	// +optional
	ClientMTLS bool `json:"clientMTLS,omitempty"`

	// peerSecretRef is the peer certificate Secret. Unset means a plaintext peer API.
	// +optional
	PeerSecretRef *corev1.LocalObjectReference `json:"peerSecretRef,omitempty"`

	// peerAutoTLS starts etcd with --peer-auto-tls: encrypted but unauthenticated peer traffic,
	// kept only for clusters adopted from the legacy operator.
	// +optional
	PeerAutoTLS bool `json:"peerAutoTLS,omitempty"`
}

// EtcdMemberStatus is what the operator observed of one member.
type EtcdMemberStatus struct {
	// memberID is etcd's member ID in hex.
	// +optional
	MemberID string `json:"memberID,omitempty"`

	// podName is the member's current Pod.
	// +optional
	PodName string `json:"podName,omitempty"`

	// podUID is the UID of the member's current Pod; a change means the Pod was replaced,
	// which for a Memory member means its data is gone.
	// +optional
	PodUID string `json:"podUID,omitempty"`

	// isVoter is true when etcd lists the member as a voter rather than a learner. It drives
	// the Pod's role=voter label, which the PodDisruptionBudget and client Service select.
	// +optional
	IsVoter bool `json:"isVoter,omitempty"`

	// replicas is 1 while the member has a Pod and 0 while it is dormant.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// selector is the label selector of the member's Pod, for the /scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// pvcName is the member's PVC, data-<member>; empty for Memory members.
	// +optional
	PVCName string `json:"pvcName,omitempty"`

	// version is the etcd version the member itself reports.
	// +optional
	Version string `json:"version,omitempty"`

	// restartBaseline is the etcd container's restart count when the member's Pod was first
	// seen up but not Ready. A Pod keeps no history of its restarts, so this is what counts
	// them for a crash loop: 3 restarts within 10 minutes of the member turning not Ready make
	// it Healthy=False/CrashLoop. Unset while the Pod is Ready, Pending or gone.
	// +optional
	RestartBaseline *RestartBaseline `json:"restartBaseline,omitempty"`

	// readyTemplateHash is the template hash of the last Pod the member was Ready in. A Pod
	// recreated with that template whose etcd then fails at every start tells of damaged data
	// (the member is replaced); a Pod with another template that never starts is a start
	// failure (a rolling update halts).
	// +optional
	ReadyTemplateHash string `json:"readyTemplateHash,omitempty"`

	// conditions are Ready, Healthy, Updated and VersionDrifted.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RestartBaseline is one Pod's etcd container restart count at one moment.
type RestartBaseline struct {
	// podUID is the Pod the count belongs to; another Pod's restarts count from zero.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	PodUID string `json:"podUID"`

	// restartCount is the etcd container's restartCount then.
	// +kubebuilder:validation:Minimum=0
	// +required
	RestartCount int32 `json:"restartCount"`
}

// EtcdMember is one etcd member: it owns the member's Pod, and records its etcd identity. The
// operator creates and deletes EtcdMembers; people act on them through annotations and
// kubectl etcd.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Running",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Voter",type=boolean,priority=1,JSONPath=`.status.isVoter`
// +kubebuilder:printcolumn:name="Updated",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Updated")].status`
type EtcdMember struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the member's template.
	// +required
	Spec EtcdMemberSpec `json:"spec"`

	// status is what the operator observed of the member.
	// +optional
	Status EtcdMemberStatus `json:"status,omitempty"`
}

// EtcdMemberList is a list of EtcdMembers.
//
// +kubebuilder:object:root=true
type EtcdMemberList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdMember `json:"items"`
}
