package desired

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// Ports of the etcd container. Their names are what Services and probes refer to in docs; the
// Services themselves target the numbers, so that Pods adopted from other operators, whose port
// names may differ, still become endpoints.
const (
	// ClientPort serves the client API (gRPC and the HTTP gateway).
	ClientPort int32 = 2379
	// PeerPort serves raft traffic between members.
	PeerPort int32 = 2380
	// MetricsPort serves /metrics, /health, /livez and /readyz over plain HTTP, so that probes
	// never need client certificates.
	MetricsPort int32 = 2381

	// ClientPortName names ClientPort on the container and the Services.
	ClientPortName = "client"
	// PeerPortName names PeerPort on the container and the headless Service.
	PeerPortName = "peer"
	// MetricsPortName names MetricsPort on the container.
	MetricsPortName = "metrics"
)

// Container layout.
const (
	// ContainerName is the name of the etcd container in every member Pod.
	ContainerName = "etcd"
	// DefaultImageRepository is used when Inputs.ImageRepository is empty; it matches the
	// operator's --etcd-image-repository default.
	DefaultImageRepository = "quay.io/coreos/etcd"
	// EtcdBinary is the etcd executable inside the official images.
	EtcdBinary = "/usr/local/bin/etcd"

	// DataVolumeName is the volume holding the data directory.
	DataVolumeName = "data"
	// DataMountPath is where the data volume is mounted, and etcd's --data-dir unless the
	// member carries a data-dir-subpath annotation.
	DataMountPath = "/var/lib/etcd"

	// ClientTLSVolumeName is the volume of the client API server certificate Secret.
	ClientTLSVolumeName = "client-tls"
	// ClientTLSMountPath is where ClientTLSVolumeName is mounted.
	ClientTLSMountPath = "/etc/etcd/tls/client"
	// PeerTLSVolumeName is the volume of the peer certificate Secret.
	PeerTLSVolumeName = "peer-tls"
	// PeerTLSMountPath is where PeerTLSVolumeName is mounted.
	PeerTLSMountPath = "/etc/etcd/tls/peer"

	// Keys of a kubernetes.io/tls Secret (plus the CA bundle cert-manager also writes).
	tlsCertKey = "tls.crt"
	tlsKeyKey  = "tls.key"
	tlsCAKey   = "ca.crt"
)

// Image is the etcd image a member of the given version runs: <repository>:v<version>, the tag
// scheme of the official etcd images. An empty repository means DefaultImageRepository.
func Image(repository, version string) string {
	if repository == "" {
		repository = DefaultImageRepository
	}
	return repository + ":v" + version
}

// PVCName is the name of a member's data PVC. It is deterministic so that a re-created Pod, a
// second operator replica or an operator restarted with a cold cache all find the same claim.
func PVCName(member string) string { return "data-" + member }

// HeadlessServiceName is the name of the cluster's headless Service, which gives members their
// stable DNS names.
func HeadlessServiceName(cluster string) string { return cluster }

// ClientServiceName is the name of the cluster's client Service.
func ClientServiceName(cluster string) string { return cluster + "-client" }

// PDBName is the name of the cluster's PodDisruptionBudget.
func PDBName(cluster string) string { return cluster }

// MemberServiceName is the headless Service a member's DNS name lives under: the cluster's
// headless Service, or, for members adopted from the legacy operator, the Service named by the
// headless-service-name annotation. Adopted members keep the old name because their peer URLs are
// persisted in etcd's membership and must keep resolving. A value that cannot be a Service name
// is ignored, because the Pod's subdomain would be rejected by the API server.
func MemberServiceName(member *etcdv1alpha2.EtcdMember) string {
	if svc := member.Annotations[etcdv1alpha2.AnnotationHeadlessServiceName]; svc != "" &&
		len(validation.IsDNS1123Label(svc)) == 0 {
		return svc
	}
	return HeadlessServiceName(member.Spec.ClusterName)
}

// MemberHost is a member's stable DNS name, <member>.<service>.<namespace>.svc. It has no
// cluster-domain suffix on purpose: adopted clusters have this form persisted in their peer URLs,
// and it resolves through the Pod's search path on every cluster domain.
func MemberHost(member, service, namespace string) string {
	return member + "." + service + "." + namespace + ".svc"
}

// ClusterLabels are the labels on every object the operator creates for a cluster (docs/api.md,
// "Labels"). Services and the PodDisruptionBudget select on LabelCluster only.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{
		etcdv1alpha2.LabelName:      etcdv1alpha2.NameEtcd,
		etcdv1alpha2.LabelInstance:  cluster,
		etcdv1alpha2.LabelManagedBy: etcdv1alpha2.ManagedByOperator,
		etcdv1alpha2.LabelCluster:   cluster,
	}
}

// MemberLabels are ClusterLabels plus the member's component label, carried by its Pod and PVC.
func MemberLabels(cluster, member string) map[string]string {
	l := ClusterLabels(cluster)
	l[etcdv1alpha2.LabelComponent] = member
	return l
}

// VoterSelector selects the voting members of a cluster: the client Service and the
// PodDisruptionBudget use it so that learners never receive client traffic and never count
// towards disruption budgets.
func VoterSelector(cluster string) map[string]string {
	return map[string]string{
		etcdv1alpha2.LabelCluster: cluster,
		etcdv1alpha2.LabelRole:    etcdv1alpha2.RoleVoter,
	}
}

// mergeMetadata returns the user's additional keys with reserved keys dropped, overlaid by the
// operator's own keys. The operator's keys win so that a user cannot detach an object from its
// Services or PDB by relabelling it. It returns nil when there is nothing to set, so that empty
// and absent maps render identically.
func mergeMetadata(additional, own map[string]string) map[string]string {
	out := make(map[string]string, len(additional)+len(own))
	for k, v := range additional {
		if !isReserved(k) {
			out[k] = v
		}
	}
	for k, v := range own {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// isReserved reports whether a label or annotation key belongs to the operator.
func isReserved(key string) bool {
	return strings.HasPrefix(key, etcdv1alpha2.ReservedPrefix)
}

// additionalLabels and additionalAnnotations read an optional AdditionalMetadata.
func additionalLabels(m *etcdv1alpha2.AdditionalMetadata) map[string]string {
	if m == nil {
		return nil
	}
	return m.Labels
}

func additionalAnnotations(m *etcdv1alpha2.AdditionalMetadata) map[string]string {
	if m == nil {
		return nil
	}
	return m.Annotations
}
