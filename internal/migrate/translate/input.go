package translate

import (
	"crypto/x509"
	"encoding/pem"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// Input is everything etcd-migrate discovered and inspected about one legacy cluster.
type Input struct {
	// Cluster is the legacy EtcdCluster; required.
	Cluster *legacy.EtcdCluster
	// StatefulSet is the live StatefulSet <c>; nil when it does not exist.
	StatefulSet *appsv1.StatefulSet
	// Pods are the Pods with the legacy labels of the cluster.
	Pods []corev1.Pod
	// PVCs are the PVCs found among data-<pod> of those Pods (missing ones are simply absent).
	PVCs []corev1.PersistentVolumeClaim
	// HeadlessService and ClientService are the live legacy Services, nil when missing.
	HeadlessService, ClientService *corev1.Service
	// StateConfigMap is <c>-cluster-state, nil when missing.
	StateConfigMap *corev1.ConfigMap
	// PDB is the live legacy PDB <c>, nil when missing.
	PDB *policyv1.PodDisruptionBudget
	// Secrets summarise the Secrets the legacy TLS section names, by name; a missing Secret is
	// absent.
	Secrets map[string]SecretSummary
	// Etcd is what inspection read from etcd; nil when inspection failed, with
	// InspectionError saying why.
	Etcd            *EtcdFacts
	InspectionError string
	// Config is the command line's part of the translation.
	Config Config
}

// Config are the etcd-migrate flags that change a translation.
type Config struct {
	// ImageRepository is this project's operator's --etcd-image-repository; empty means its
	// default.
	ImageRepository string
	// Version overrides the version read from the image tag (--version).
	Version string
	// AuthSecret names a basic-auth Secret with root's password (--auth-secret, [ns/]name);
	// empty means a generated <c>-root-credentials.
	AuthSecret string
}

// EtcdFacts is what inspection read from etcd through a Running member.
type EtcdFacts struct {
	// ClusterIDs are the distinct cluster IDs the members reported, in hex; more than one is
	// a split brain.
	ClusterIDs []string
	// Members is MemberList.
	Members []EtcdMember
	// Version is the lowest server version the members reported.
	Version string
	// AuthEnabled is AuthStatus.
	AuthEnabled bool
	// Alarms are the active alarms, "<type> on <member>".
	Alarms []string
	// Unhealthy names the members whose Status failed or that reported errors.
	Unhealthy []string
	// HashKVMismatch says HashKV at a common revision differed between members; Detail says
	// how.
	HashKVMismatch bool
	HashKVDetail   string
}

// EtcdMember is one entry of MemberList.
type EtcdMember struct {
	// ID is the member ID in hex.
	ID string
	// Name is empty for a member added but never started.
	Name      string
	PeerURLs  []string
	IsLearner bool
}

// SecretSummary is what translation may know of a Secret: which keys it has, its ca.crt (a
// public certificate bundle) and the names its tls.crt certifies. Never a private key.
type SecretSummary struct {
	Name string
	// Keys are the Secret's data keys, sorted.
	Keys []string
	// CA is the ca.crt bundle, nil without one.
	CA []byte
	// CertDNSNames are the DNS SANs of the first certificate in tls.crt.
	CertDNSNames []string
}

// Summarize reduces a Secret to what translation may see.
func Summarize(s *corev1.Secret) SecretSummary {
	out := SecretSummary{Name: s.Name}
	for k := range s.Data {
		out.Keys = append(out.Keys, k)
	}
	sort.Strings(out.Keys)
	if ca := s.Data[keyCA]; len(ca) > 0 {
		out.CA = append([]byte(nil), ca...)
	}
	if block, _ := pem.Decode(s.Data[corev1.TLSCertKey]); block != nil {
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			out.CertDNSNames = cert.DNSNames
		}
	}
	return out
}

// has reports whether the Secret has a non-empty key (a key listed at all; Summarize keeps
// empty values listed, and a TLS key of zero bytes is as useless as none).
func (s SecretSummary) has(key string) bool {
	for _, k := range s.Keys {
		if k == key {
			return key != keyCA || len(s.CA) > 0
		}
	}
	return false
}

// keyCA is the CA bundle key in TLS Secrets.
const keyCA = "ca.crt"
