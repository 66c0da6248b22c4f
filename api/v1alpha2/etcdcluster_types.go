package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdClusterSpec is the desired state of an etcd cluster.
//
// The spec-level rules below compare the whole spec with its previous value, because a transition
// rule on an optional field does not run when that field is being added or removed.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.replicas) && self.replicas == 0 && has(self.storage) && has(self.storage.medium) && self.storage.medium == 'Memory')",message="spec.replicas=0 with spec.storage.medium=Memory is unsupported: pausing a memory-backed cluster wedges on resume. Delete and recreate the cluster instead."
// +kubebuilder:validation:XValidation:rule="!(has(self.storage) && has(self.storage.medium) && self.storage.medium == 'Memory') || (has(self.storage.size) && quantity(string(self.storage.size)).isGreaterThan(quantity('0')))",message="spec.storage.size must be > 0 when spec.storage.medium=Memory (the tmpfs sizeLimit cannot be zero)."
// +kubebuilder:validation:XValidation:rule="has(self.tls) == has(oldSelf.tls)",message="spec.tls cannot be added to or removed from an existing cluster; delete and recreate"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(oldSelf.tls) || self.tls == oldSelf.tls || (has(self.tls.managed) && !has(oldSelf.tls.managed) && (!has(oldSelf.tls.client) || has(oldSelf.tls.client.serverSecretRef)) && (!has(oldSelf.tls.peer) || has(oldSelf.tls.peer.secretRef)))",message="spec.tls is immutable post-create; delete and recreate the cluster to change TLS configuration (the one change allowed is a move from your own Secrets, spec.tls.client.serverSecretRef and spec.tls.peer.secretRef, to spec.tls.managed: {})"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(oldSelf.tls) || !has(self.tls.managed) || has(oldSelf.tls.managed) || (has(oldSelf.tls.client) && has(oldSelf.tls.peer))",message="spec.tls.managed can replace your own certificates only on a cluster with both client TLS (spec.tls.client.serverSecretRef) and peer TLS (spec.tls.peer.secretRef): a plaintext client or peer API cannot turn to TLS one member at a time; delete and recreate the cluster"
// +kubebuilder:validation:XValidation:rule="has(self.storage.storageClassName) == has(oldSelf.storage.storageClassName)",message="spec.storage.storageClassName cannot be added to or removed from an existing cluster; delete and recreate"
// +kubebuilder:validation:XValidation:rule="!has(self.storage.storageClassName) || !has(oldSelf.storage.storageClassName) || self.storage.storageClassName == oldSelf.storage.storageClassName",message="spec.storage.storageClassName is immutable post-create (a PVC's storageClassName itself is immutable, and the operator does not roll PVCs); delete and recreate the cluster to change the StorageClass"
// +kubebuilder:validation:XValidation:rule="has(self.auth) == has(oldSelf.auth)",message="spec.auth cannot be added to or removed from an existing cluster; delete and recreate"
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !has(oldSelf.auth) || self.auth == oldSelf.auth",message="spec.auth is immutable post-create; delete and recreate the cluster to change auth configuration"
// +kubebuilder:validation:XValidation:rule="!(has(self.auth) && has(self.auth.enabled) && self.auth.enabled) || (has(self.tls) && (has(self.tls.client) || has(self.tls.managed)))",message="spec.auth.enabled requires spec.tls.client (auth credentials must not cross a plaintext connection)"
// +kubebuilder:validation:XValidation:rule="!(has(self.auth) && has(self.auth.enabled) && self.auth.enabled) || has(self.auth.rootCredentialsSecretRef)",message="spec.auth.enabled requires spec.auth.rootCredentialsSecretRef"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap)",message="spec.bootstrap cannot be added to or removed from an existing cluster; it is consulted only at first bootstrap"
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || !has(oldSelf.bootstrap) || self.bootstrap == oldSelf.bootstrap",message="spec.bootstrap is immutable post-create; it is consulted only at first bootstrap"
// +kubebuilder:validation:XValidation:rule="!(has(self.bootstrap) && has(self.bootstrap.restore)) || !(has(self.storage) && has(self.storage.medium) && self.storage.medium == 'Memory')",message="spec.bootstrap.restore is unsupported with spec.storage.medium=Memory: the restored data dir is tmpfs, so any seed Pod restart re-restores the snapshot — reverting writes (single member) or breaking the cluster with a fresh ID it can't rejoin (multi-member). Use persistent storage to restore."
// +kubebuilder:validation:XValidation:rule="!has(self.options) || !has(self.options.quotaBackendBytes) || !has(self.storage) || !has(self.storage.size) || !quantity(string(self.storage.size)).isLessThan(self.options.quotaBackendBytes == 0 ? quantity('2Gi') : quantity('0').add(self.options.quotaBackendBytes))",fieldPath=".options.quotaBackendBytes",message="spec.options.quotaBackendBytes must not exceed spec.storage.size (0 means etcd's own default, 2 GiB): the volume would fill up before etcd raises its NOSPACE alarm; lower the quota, leave it unset for min(2 GiB, size/2), or grow spec.storage.size"
// +kubebuilder:validation:XValidation:rule="!has(self.clientService) || !has(self.clientService.type) || !(self.clientService.type in ['LoadBalancer', 'NodePort']) || (has(self.clientService.allowUnauthenticated) && self.clientService.allowUnauthenticated) || (has(self.tls) && has(self.tls.managed)) || (has(self.tls) && has(self.tls.client) && ((has(self.auth) && has(self.auth.enabled) && self.auth.enabled) || has(self.tls.client.operatorClientSecretRef) || (has(self.tls.client.certManager) && has(self.tls.client.certManager.operatorClientIssuerRef))))",fieldPath=".clientService.type",message="spec.clientService.type LoadBalancer or NodePort exposes etcd outside the cluster, which needs client TLS and authenticated clients: spec.tls.managed, or spec.tls.client with spec.auth.enabled or client certificates (spec.tls.client.operatorClientSecretRef or certManager.operatorClientIssuerRef); add them, use type ClusterIP, or set spec.clientService.allowUnauthenticated: true to accept an endpoint that anyone who reaches it can read and write"
type EtcdClusterSpec struct {
	// replicas is the number of etcd members, at most 7 (etcd's recommended largest cluster:
	// every write waits for a majority, so more members make writes slower without making the
	// cluster much safer). An odd number is recommended: 4 members tolerate no more failures
	// than 3. 0 pauses the cluster: one dormant member keeps its PVC and member ID, and setting
	// replicas back to N resumes with the same cluster ID and data. Works with kubectl scale
	// through the /scale subresource.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self <= 7",message="spec.replicas must be at most 7: etcd recommends at most 7 members, since every write waits for a majority of them; use 1, 3, 5 or 7"
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// version is the etcd version, for example "3.6.5"; members run the image
	// <repository>:v<version>. At least 3.5.0, the oldest version the operator runs. Changes are
	// rolled to running members one at a time. Patch changes are free; a minor version may only
	// go up, one minor at a time.
	// +kubebuilder:validation:Pattern=`^\d+\.\d+\.\d+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || int(self.split('.')[0]) > 3 || (int(self.split('.')[0]) == 3 && (int(self.split('.')[1]) > 5 || (int(self.split('.')[1]) == 5 && int(self.split('.')[2]) >= 0)))",message="spec.version must be 3.5.0 or later, the oldest etcd version the operator runs; choose a newer release"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || !oldSelf.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || self.split('.')[0] == oldSelf.split('.')[0]",messageExpression="'spec.version: changing the major version from ' + oldSelf + ' to ' + self + ' is not supported; stay on ' + oldSelf.split('.')[0] + '.x'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || !oldSelf.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || self.split('.')[0] != oldSelf.split('.')[0] || int(self.split('.')[1]) >= int(oldSelf.split('.')[1])",message="spec.version: a minor downgrade is not supported by etcd; allowed next versions are patches of the current minor or the next minor",messageExpression="'spec.version: ' + oldSelf + ' to ' + self + ' is a minor downgrade, which etcd does not support; allowed next versions: any ' + oldSelf.split('.')[0] + '.' + oldSelf.split('.')[1] + '.x patch, or ' + oldSelf.split('.')[0] + '.' + ['1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16','17','18','19','20','21','22','23','24','25','26','27','28','29','30','31','32'][int(oldSelf.split('.')[1])] + '.x'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || !oldSelf.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || self.split('.')[0] != oldSelf.split('.')[0] || int(self.split('.')[1]) <= int(oldSelf.split('.')[1]) + 1",message="spec.version: etcd upgrades one minor version at a time; upgrade to the next minor first",messageExpression="'spec.version: ' + oldSelf + ' to ' + self + ' skips a minor version; etcd upgrades one minor at a time, so set ' + oldSelf.split('.')[0] + '.' + ['1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16','17','18','19','20','21','22','23','24','25','26','27','28','29','30','31','32'][int(oldSelf.split('.')[1])] + '.x first'"
	// +required
	Version string `json:"version"`

	// storage is each member's data directory: a PVC by default, or tmpfs with medium Memory.
	// Its size must be at least 256Mi with either medium: etcd preallocates two 64 MB WAL segments
	// next to its database, and the default quota (half the size) must leave room for them.
	// +kubebuilder:default={size: "1Gi", medium: ""}
	// +kubebuilder:validation:XValidation:rule="!has(self.size) || quantity(string(self.size)).compareTo(quantity('256Mi')) >= 0 || (has(self.medium) && self.medium == 'Memory' && !quantity(string(self.size)).isGreaterThan(quantity('0')))",fieldPath=".size",message="spec.storage.size must be at least 256Mi (the PVC request, or the tmpfs sizeLimit with medium Memory): etcd preallocates two 64 MB WAL segments next to its database, and the default quota of half the size must leave room for them; set 256Mi or more"
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// progressDeadlineSeconds bounds how long the operator works towards one target before it
	// reports DeadlineExceeded and adopts the newest spec. Expiry is never terminal: work goes
	// on. A new value applies the next time a deadline is armed.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// tls configures client (2379) and peer (2380) TLS. Unset means plaintext on both. It can
	// be neither added, removed nor changed after creation, but for one move: from your own
	// Secrets (client.serverSecretRef and peer.secretRef) to managed.
	// +optional
	TLS *EtcdClusterTLS `json:"tls,omitempty"`

	// auth turns on etcd authentication with a single root user. Immutable after creation.
	// +optional
	Auth *AuthSpec `json:"auth,omitempty"`

	// bootstrap is one-time initialisation, read only while the cluster has no cluster ID.
	// Immutable after creation.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// resources are the etcd container's requests and limits. Unset means requests of 100m CPU
	// and 128Mi memory and no limits. Changes roll to running members.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// additionalMetadata is merged onto every object the operator creates for this cluster
	// (Pods, PVCs, Services, PodDisruptionBudget, EtcdMembers), in place and without restarts.
	// Keys and values must be valid Kubernetes label and annotation keys and values, and the
	// annotations may hold at most 128 KiB, so that every object they are copied onto is valid.
	// +kubebuilder:validation:XValidation:rule="!has(self.labels) || self.labels.all(k, !format.qualifiedName().validate(k).hasValue())",fieldPath=".labels",message="spec.additionalMetadata.labels has a key that is not a valid label key (an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, such as example.com/team); Kubernetes would refuse every object the operator creates with it, so fix or remove the key"
	// +kubebuilder:validation:XValidation:rule="!has(self.labels) || self.labels.all(k, !format.labelValue().validate(self.labels[k]).hasValue())",fieldPath=".labels",message="spec.additionalMetadata.labels has a value that is not a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.' that start and end with a letter or digit); Kubernetes would refuse every object the operator creates with it, so fix the value"
	// +kubebuilder:validation:XValidation:rule="!has(self.annotations) || self.annotations.all(k, !format.qualifiedName().validate(k.lowerAscii()).hasValue())",fieldPath=".annotations",message="spec.additionalMetadata.annotations has a key that is not a valid annotation key (the form of a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, such as example.com/team); Kubernetes would refuse every object the operator creates with it, so fix or remove the key"
	// +kubebuilder:validation:XValidation:rule="!has(self.annotations) || self.annotations.map(k, size(bytes(k)) + size(bytes(self.annotations[k]))).sum() <= 131072",fieldPath=".annotations",message="spec.additionalMetadata.annotations may hold at most 128 KiB of keys and values together: they are copied onto every Pod, PVC, Service and EtcdMember of the cluster, where Kubernetes allows 256 KiB of annotations in all, shared with the operator's own and other controllers'; shorten or remove some"
	// +optional
	AdditionalMetadata *AdditionalMetadata `json:"additionalMetadata,omitempty"`

	// affinity is the member Pods' affinity. Unset means a preferred anti-affinity that spreads
	// members across nodes (kubernetes.io/hostname); an explicit empty object ({}) disables that
	// default. Changes roll to running members.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// topologySpreadConstraints spread member Pods across topology domains. Changes roll to
	// running members.
	// +listType=atomic
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// options are typed etcd flags. Changes roll to running members.
	// +kubebuilder:validation:XValidation:rule="!has(self.snapshotCount) || self.snapshotCount <= 100000",fieldPath=".snapshotCount",message="spec.options.snapshotCount must be at most 100000 (etcd 3.5's default; 3.6 and later default to 10000): a longer interval keeps more raft log in memory and delays the 3.6 to 3.7 upgrade, which waits until every member has taken a snapshot; lower it, or leave it unset for etcd's default"
	// +kubebuilder:validation:XValidation:rule="!has(self.autoCompactionMode) || self.autoCompactionMode != 'revision' || !has(self.autoCompactionRetention) || self.autoCompactionRetention.matches('^[0-9]+$')",fieldPath=".autoCompactionRetention",message="spec.options.autoCompactionRetention must be a revision count such as 1000 when spec.options.autoCompactionMode is revision: etcd would read a duration such as 1h as 3.6 trillion revisions and never compact; write an integer, or use autoCompactionMode periodic for a duration"
	// +optional
	Options *EtcdOptions `json:"options,omitempty"`

	// imagePullSecrets are used to pull the etcd image. A change is used at each member's next
	// Pod creation and does not restart members by itself.
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// nodeSelector restricts member Pods to matching nodes: at most 64 entries, each a valid
	// label key and value. Changes roll to running members.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="spec.nodeSelector has a key that is not a valid label key (an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, such as example.com/team); Kubernetes would refuse every member Pod with it, so fix or remove the key"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.labelValue().validate(self[k]).hasValue())",message="spec.nodeSelector has a value that is not a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.' that start and end with a letter or digit); Kubernetes would refuse every member Pod with it, so fix the value"
	// +optional
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// tolerations let member Pods run on tainted nodes. Changes roll to running members.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// priorityClassName is the member Pods' PriorityClass. Changes roll to running members.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// podSecurityContext narrows the restricted security context member Pods run with. Changes
	// roll to running members.
	// +optional
	PodSecurityContext *PodSecurityOverrides `json:"podSecurityContext,omitempty"`

	// clientService customises the client Service <cluster>-client, in place.
	// +optional
	ClientService *ClientServiceSpec `json:"clientService,omitempty"`
}

// EtcdClusterTLS configures TLS for the client API (port 2379) and the peer API (port 2380),
// each optional. Which mode a plane runs in follows from which fields are present.
// +kubebuilder:validation:XValidation:rule="!has(self.managed) || (!has(self.client) && !has(self.peer))",message="spec.tls.managed cannot be combined with spec.tls.client or spec.tls.peer: with managed the operator issues the client and the peer certificates itself; remove client and peer, or remove managed"
type EtcdClusterTLS struct {
	// client configures TLS on the client API. Unset means plaintext.
	// +optional
	Client *ClientTLS `json:"client,omitempty"`

	// peer configures TLS on the peer API; it is always mutual TLS. Unset means plaintext.
	// +optional
	Peer *PeerTLS `json:"peer,omitempty"`

	// managed has the operator run two CAs for the cluster and issue and renew every
	// certificate itself: mutual TLS on the client API and on the peer API. Excludes client and
	// peer.
	// +optional
	Managed *ManagedTLS `json:"managed,omitempty"`
}

// ClientTLS is client API TLS from exactly one source: a Secret you provide (serverSecretRef)
// or certificates cert-manager issues (certManager). With serverSecretRef alone etcd serves TLS
// without checking clients; adding operatorClientSecretRef turns on mutual TLS.
// +kubebuilder:validation:XValidation:rule="has(self.serverSecretRef) != has(self.certManager)",message="exactly one of spec.tls.client.serverSecretRef or spec.tls.client.certManager must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.certManager) || !has(self.operatorClientSecretRef)",message="spec.tls.client.operatorClientSecretRef cannot be combined with certManager; use certManager.operatorClientIssuerRef"
type ClientTLS struct {
	// serverSecretRef names a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt for
	// etcd's client listener. ca.crt is required: the operator verifies etcd with it, and under
	// mutual TLS it is also etcd's --trusted-ca-file. The operator checks the certificate's SANs
	// and key usages.
	// +optional
	ServerSecretRef *corev1.LocalObjectReference `json:"serverSecretRef,omitempty"`

	// operatorClientSecretRef names a Secret with the operator's client certificate (tls.crt,
	// tls.key). Setting it turns on mutual TLS (--client-cert-auth).
	// +optional
	OperatorClientSecretRef *corev1.LocalObjectReference `json:"operatorClientSecretRef,omitempty"`

	// certManager has cert-manager issue the client API certificates.
	// +optional
	CertManager *ClientCertManagerTLS `json:"certManager,omitempty"`
}

// ClientCertManagerTLS asks cert-manager for the client API certificates.
type ClientCertManagerTLS struct {
	// serverIssuerRef signs the server certificate: Certificate <cluster>-server, Secret
	// <cluster>-server-tls.
	// +required
	ServerIssuerRef IssuerReference `json:"serverIssuerRef"`

	// operatorClientIssuerRef signs the operator's client certificate (Certificate
	// <cluster>-operator-client, Secret <cluster>-operator-client-tls). Setting it turns on
	// mutual TLS.
	// +optional
	OperatorClientIssuerRef *IssuerReference `json:"operatorClientIssuerRef,omitempty"`
}

// PeerTLS is peer API TLS from exactly one source. Peer TLS is always mutual.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) != has(self.certManager)",message="exactly one of spec.tls.peer.secretRef or spec.tls.peer.certManager must be set"
type PeerTLS struct {
	// secretRef names a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt. The
	// certificate serves and dials peer connections, so it needs both the serverAuth and the
	// clientAuth key usage.
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`

	// certManager has cert-manager issue the peer certificate.
	// +optional
	CertManager *PeerCertManagerTLS `json:"certManager,omitempty"`
}

// PeerCertManagerTLS asks cert-manager for the peer certificate.
type PeerCertManagerTLS struct {
	// issuerRef signs the peer certificate: Certificate <cluster>-peer, Secret <cluster>-peer-tls.
	// +required
	IssuerRef IssuerReference `json:"issuerRef"`
}

// IssuerReference names a cert-manager Issuer or ClusterIssuer (group cert-manager.io).
type IssuerReference struct {
	// name is the issuer's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// kind is Issuer (in the cluster's namespace, the default) or ClusterIssuer.
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
}

// AuthSpec turns on etcd authentication with one user, root.
type AuthSpec struct {
	// enabled makes the operator create user root with the Secret's password, grant it role
	// root, and enable authentication once the cluster has converged. Requires spec.tls.client.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// rootCredentialsSecretRef names a kubernetes.io/basic-auth Secret whose non-empty
	// "password" key is root's password. Its "username" key is ignored and should be "root".
	// Required when enabled is true.
	// +optional
	RootCredentialsSecretRef *corev1.LocalObjectReference `json:"rootCredentialsSecretRef,omitempty"`
}

// BootstrapSpec is one-time initialisation of a new cluster.
type BootstrapSpec struct {
	// restore seeds the new cluster from a snapshot instead of an empty data directory. The
	// restored cluster gets a new cluster ID. Not allowed with medium Memory.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// ClientServiceType is the Service type of the client Service.
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
type ClientServiceType string

// ClientServiceSpec customises the client Service <cluster>-client.
type ClientServiceSpec struct {
	// type is the Service type: ClusterIP (default), NodePort or LoadBalancer. NodePort and
	// LoadBalancer need spec.tls.client and authenticated clients (spec.auth.enabled, or client
	// certificates), unless allowUnauthenticated is set. Exposing the Service adds no names to
	// certificates: cover external names in your own certificates.
	// +kubebuilder:default=ClusterIP
	// +optional
	Type ClientServiceType `json:"type,omitempty"`

	// allowUnauthenticated accepts a NodePort or LoadBalancer type on a cluster whose clients
	// are not authenticated: no spec.tls.client, or neither spec.auth.enabled nor client
	// certificates. Anyone who reaches such a Service can read and write every key. It only
	// lifts that admission rule, and means nothing for ClusterIP or an authenticated cluster.
	// +optional
	AllowUnauthenticated bool `json:"allowUnauthenticated,omitempty"`

	// annotations are merged onto the client Service only, for example load-balancer settings:
	// at most 64 valid annotation keys, and 64 KiB of keys and values together. Keys with the
	// prefix etcd-operator.cozystack.io/ are rejected.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd-operator.cozystack.io/'))",message="spec.clientService.annotations must not use the reserved prefix etcd-operator.cozystack.io/; remove those keys"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k.lowerAscii()).hasValue())",message="spec.clientService.annotations has a key that is not a valid annotation key (the form of a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, such as example.com/team); Kubernetes would refuse the client Service with it, so fix or remove the key"
	// +kubebuilder:validation:XValidation:rule="self.map(k, size(bytes(k)) + size(bytes(self[k]))).sum() <= 65536",message="spec.clientService.annotations may hold at most 64 KiB of keys and values together: the client Service also carries spec.additionalMetadata.annotations, and Kubernetes allows 256 KiB of annotations in all; shorten or remove some"
	// +optional
	Annotations map[string]AnnotationValue `json:"annotations,omitempty"`
}

// ObservedClusterSpec is the target the operator has latched from spec and is converging to.
// Spec edits made while a target is in flight wait until it is reached or its deadline passes.
type ObservedClusterSpec struct {
	// replicas is the latched member count.
	// +required
	Replicas int32 `json:"replicas"`

	// version is the latched etcd version.
	// +required
	Version string `json:"version"`

	// storage is the latched storage; reclaimPolicy is read from spec and ignored here.
	// +required
	Storage StorageSpec `json:"storage"`

	// resources are the latched etcd container resources.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// affinity is the latched member Pod affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// topologySpreadConstraints are the latched member Pod spread constraints.
	// +listType=atomic
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// additionalMetadata is the latched extra metadata.
	// +optional
	AdditionalMetadata *AdditionalMetadata `json:"additionalMetadata,omitempty"`

	// options are the latched etcd options.
	// +optional
	Options *EtcdOptions `json:"options,omitempty"`

	// imagePullSecrets are the latched image pull Secrets.
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// nodeSelector is the latched member Pod node selector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations are the latched member Pod tolerations.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// priorityClassName is the latched member Pod PriorityClass.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// podSecurityContext is the latched security context override.
	// +optional
	PodSecurityContext *PodSecurityOverrides `json:"podSecurityContext,omitempty"`
}

// EtcdClusterStatus is the observed state of an etcd cluster, recomputed on every reconcile.
type EtcdClusterStatus struct {
	// readyMembers counts running voting members whose EtcdMember is Ready (learners never
	// are). It is the /scale status replica count.
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`

	// selector is the label selector of the cluster's Pods, for the /scale subresource
	// (kubectl scale, VerticalPodAutoscaler).
	// +optional
	Selector string `json:"selector,omitempty"`

	// brokenMembers counts members whose Healthy condition is False: replacement candidates.
	// +optional
	BrokenMembers int32 `json:"brokenMembers,omitempty"`

	// updatedMembers counts running members whose Pod runs the current member template.
	// +optional
	UpdatedMembers int32 `json:"updatedMembers,omitempty"`

	// runningVersion is the lowest etcd version reported by running members; for a paused
	// cluster, the dormant member's last version. Version changes are checked against it.
	// +optional
	RunningVersion string `json:"runningVersion,omitempty"`

	// minorSince records since when every member runs the lowest running minor, and whether
	// every member has taken a raft snapshot since: until then a member restarting on its data
	// dir may replay log entries an older minor wrote, which the next minor may not read (etcd
	// 3.7 cannot apply entries 3.5 wrote), so the step to the next minor waits for it.
	// +optional
	MinorSince *MinorSince `json:"minorSince,omitempty"`

	// clusterID is etcd's cluster ID in hex, latched once at discovery.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`

	// clusterToken is the --initial-cluster-token every member is started with.
	// +optional
	ClusterToken string `json:"clusterToken,omitempty"`

	// authEnabled is latched to true once etcd authentication is on; it is never cleared.
	// +optional
	AuthEnabled bool `json:"authEnabled,omitempty"`

	// lastSnapshot is the newest Complete EtcdSnapshot of this cluster the operator has seen;
	// it stays when that EtcdSnapshot is deleted, until a newer one completes.
	// +optional
	LastSnapshot *LastSnapshot `json:"lastSnapshot,omitempty"`

	// observed is the target latched from spec that the operator is converging to.
	// +optional
	Observed *ObservedClusterSpec `json:"observed,omitempty"`

	// progressDeadline is when the current target's deadline expires. It is set whenever the
	// cluster has not converged and cleared on convergence or pause. Patch it into the past to
	// make the operator adopt a pending spec now.
	// +optional
	ProgressDeadline *metav1.Time `json:"progressDeadline,omitempty"`

	// observedGeneration is the metadata.generation last latched into observed. Together with
	// Progressing=False/Reconciled it means the spec is fully applied.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// replacementBackoff is set while replacements of members that never started are backed
	// off (5 minutes, doubling to 1 hour), and cleared once the cluster converges.
	// +optional
	ReplacementBackoff *ReplacementBackoff `json:"replacementBackoff,omitempty"`

	// quorumRecovery is set while the operator recovers a cluster that lost its quorum from one
	// surviving member (docs/disaster-recovery.md), and cleared once only that member is left
	// and the cluster serves again.
	// +optional
	QuorumRecovery *QuorumRecovery `json:"quorumRecovery,omitempty"`

	// conditions are Available, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MinorSince is the point from which every member ran one minor version.
type MinorSince struct {
	// minor is the lowest minor every member runs, such as "3.6".
	Minor string `json:"minor"`

	// raftIndex is the cluster's committed raft index when the operator first saw every member
	// run minor; 0 for a cluster formed on minor, whose log holds nothing older.
	// +optional
	RaftIndex int64 `json:"raftIndex,omitempty"`

	// snapshotted is true once every member has applied more than a snapshot interval
	// (--snapshot-count, plus a margin) beyond raftIndex, so has taken a raft snapshot since:
	// a member then replays only entries written under minor.
	// +optional
	Snapshotted bool `json:"snapshotted,omitempty"`
}

// ReplacementBackoff spaces out replacements whose new member never started: the same cause
// (an image that cannot be pulled, a node that cannot run it) would make every new member fail
// alike.
type ReplacementBackoff struct {
	// attempts counts the consecutive members that never started.
	Attempts int32 `json:"attempts"`

	// notBefore is when the member that failed last may be replaced.
	NotBefore metav1.Time `json:"notBefore"`
}

// EtcdCluster is an etcd cluster run by the operator: one EtcdMember, Pod and PVC per member,
// with membership changed only through etcd's membership API.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.readyMembers,selectorpath=.status.selector
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 56 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name of an EtcdCluster must be a DNS label of at most 56 characters that starts with a letter: it names the Services <name> and <name>-client and the members <name>-xxxxx, whose host names are limited to 63"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedMembers`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Running",type=string,priority=1,JSONPath=`.status.runningVersion`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Progressing")].reason`
// +kubebuilder:printcolumn:name="Last Snapshot",type=date,priority=1,JSONPath=`.status.lastSnapshot.completedAt`
type EtcdCluster struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired cluster.
	// +required
	Spec EtcdClusterSpec `json:"spec"`

	// status is the observed cluster.
	// +optional
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdClusters.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}
