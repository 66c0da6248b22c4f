package legacy

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// EtcdCluster is the legacy etcd.aenix.io/v1alpha1 EtcdCluster: one StatefulSet of etcd Pods.
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdClusterSpec   `json:"spec,omitempty"`
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterSpec is the legacy cluster spec. Every template is merged by the legacy operator
// onto objects it renders itself, so a template's fields only say what the user asked for, not
// what runs: the live StatefulSet says that.
type EtcdClusterSpec struct {
	// Replicas is the StatefulSet's replica count; the CRD defaults it to 3.
	Replicas *int32 `json:"replicas,omitempty"`
	// Options are extra etcd flags, rendered as --key=value (--key alone for an empty value).
	Options map[string]string `json:"options,omitempty"`
	// PodTemplate is strategically merged onto the Pod template the legacy operator renders.
	PodTemplate PodTemplate `json:"podTemplate,omitempty"`
	// ServiceTemplate is merged onto the client Service.
	ServiceTemplate *EmbeddedService `json:"serviceTemplate,omitempty"`
	// HeadlessServiceTemplate renames and labels the headless Service.
	HeadlessServiceTemplate *EmbeddedMetadataResource `json:"headlessServiceTemplate,omitempty"`
	// PodDisruptionBudgetTemplate, when set, makes the legacy operator create a PDB named like
	// the cluster.
	PodDisruptionBudgetTemplate *EmbeddedPodDisruptionBudget `json:"podDisruptionBudgetTemplate,omitempty"`
	// Storage is an emptyDir or a volume claim template.
	Storage StorageSpec `json:"storage"`
	// Security holds the TLS Secrets and the auth switch.
	Security *SecuritySpec `json:"security,omitempty"`
	// Bootstrap restores a new legacy cluster from a snapshot; it means nothing once the cluster
	// has data.
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
}

// EtcdClusterStatus carries the legacy conditions (ConditionInitialized, ConditionReady,
// ConditionError).
type EtcdClusterStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Legacy condition types and the reason of its split-brain error.
const (
	ConditionInitialized = "Initialized"
	ConditionReady       = "Ready"
	ConditionError       = "Error"
	// ReasonSplitbrain is the reason of ConditionError when members report more than one
	// cluster ID.
	ReasonSplitbrain = "Splitbrain"
)

// EmbeddedObjectMetadata is the metadata subset the legacy templates accept.
type EmbeddedObjectMetadata struct {
	Name        string            `json:"name,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodTemplate is the legacy podTemplate: metadata plus a PodSpec merged onto the rendered one.
type PodTemplate struct {
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
	Spec                   corev1.PodSpec `json:"spec,omitempty"`
}

// StorageSpec is an emptyDir or, when that is unset, a volume claim template.
type StorageSpec struct {
	EmptyDir            *corev1.EmptyDirVolumeSource  `json:"emptyDir,omitempty"`
	VolumeClaimTemplate EmbeddedPersistentVolumeClaim `json:"volumeClaimTemplate,omitempty"`
}

// EmbeddedPersistentVolumeClaim is the legacy volume claim template. A non-empty metadata.name
// renames the claim template (and so every PVC); etcd-migrate refuses that layout.
type EmbeddedPersistentVolumeClaim struct {
	metav1.TypeMeta        `json:",inline"`
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
	Spec                   corev1.PersistentVolumeClaimSpec `json:"spec,omitempty"`
}

// EmbeddedService is the legacy client Service template.
type EmbeddedService struct {
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
	Spec                   corev1.ServiceSpec `json:"spec,omitempty"`
}

// EmbeddedMetadataResource is a metadata-only template (the headless Service's).
type EmbeddedMetadataResource struct {
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
}

// EmbeddedPodDisruptionBudget is the legacy PDB template.
type EmbeddedPodDisruptionBudget struct {
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
	Spec                   PodDisruptionBudgetSpec `json:"spec"`
}

// PodDisruptionBudgetSpec is the legacy PDB budget; with neither field set the legacy operator
// uses minAvailable = quorum of spec.replicas.
type PodDisruptionBudgetSpec struct {
	MinAvailable   *intstr.IntOrString `json:"minAvailable,omitempty"`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// SecuritySpec is the legacy security section.
type SecuritySpec struct {
	TLS TLSSpec `json:"tls,omitempty"`
	// EnableAuth makes the legacy operator turn on etcd authentication (root user) through the
	// client API; it changes no flag of the StatefulSet.
	EnableAuth bool `json:"enableAuth,omitempty"`
}

// TLSSpec names the six legacy TLS Secrets. Each is optional; which flags etcd gets follows
// from which are set (see the Flag* constants).
type TLSSpec struct {
	// PeerTrustedCASecret holds ca.crt, the peer CA (mounted only with PeerSecret).
	PeerTrustedCASecret string `json:"peerTrustedCASecret,omitempty"`
	// PeerSecret holds tls.crt and tls.key for the peer listener; unset means --peer-auto-tls.
	PeerSecret string `json:"peerSecret,omitempty"`
	// ServerTrustedCASecret holds ca.crt that clients (the legacy operator) verify the server
	// with; it is not mounted into etcd.
	ServerTrustedCASecret string `json:"serverTrustedCASecret,omitempty"`
	// ServerSecret holds tls.crt and tls.key for the client listener; unset means plain HTTP.
	ServerSecret string `json:"serverSecret,omitempty"`
	// ClientTrustedCASecret holds ca.crt that etcd verifies client certificates with (mounted
	// only with ClientSecret).
	ClientTrustedCASecret string `json:"clientTrustedCASecret,omitempty"`
	// ClientSecret holds the legacy operator's client certificate; setting it turns on
	// --client-cert-auth.
	ClientSecret string `json:"clientSecret,omitempty"`
}

// BootstrapSpec is the legacy one-time restore.
type BootstrapSpec struct {
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// RestoreSpec names the snapshot a new legacy cluster was restored from.
type RestoreSpec struct {
	Source BackupDestination `json:"source"`
}

// EtcdClusterList is a list of legacy clusters.
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

// Replicas is spec.replicas with the CRD default applied.
func (c *EtcdCluster) Replicas() int32 {
	if c.Spec.Replicas == nil {
		return DefaultReplicas
	}
	return *c.Spec.Replicas
}

// TLS is the cluster's TLS section, empty when security is unset.
func (c *EtcdCluster) TLS() TLSSpec {
	if c.Spec.Security == nil {
		return TLSSpec{}
	}
	return c.Spec.Security.TLS
}

// AuthEnabled reports security.enableAuth.
func (c *EtcdCluster) AuthEnabled() bool {
	return c.Spec.Security != nil && c.Spec.Security.EnableAuth
}
