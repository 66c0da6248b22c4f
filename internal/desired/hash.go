package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// CADigests are digests of the ca.crt files mounted into a member, as computed by the caller
// (for example "sha256:<hex>" of the Secret's ca.crt bytes). A new CA bundle must restart etcd,
// which reads trusted CAs only at start, whereas new leaf certificates are picked up live; so the
// CA digests, and nothing else from the Secrets, enter the template hash. Empty means the Secret
// is not mounted or has no ca.crt.
type CADigests struct {
	// Client is the digest of ca.crt in the client API server Secret.
	Client string
	// Peer is the digest of ca.crt in the peer Secret.
	Peer string
}

// Images are the images a member's Pod is built from: etcd's and the operator's own, which holds
// the data-dir guard of PVC members (Inputs.GuardImage). Both are the "effective image" of the
// template hash: a new guard reaches running PVC members only through a restart, so an operator
// image change rolls them like any other template change, gated one member at a time.
type Images struct {
	// Etcd is the etcd image reference, from Image.
	Etcd string
	// Guard is the operator image whose guard PVC members run under; empty when the operator
	// has none (it runs outside a Pod), and then it leaves the hash as it was without a guard.
	Guard string
}

// MemberImages are the images a member of the given etcd version is built from by an operator
// with the given --etcd-image-repository and guard image.
func MemberImages(repository, version, guard string) Images {
	return Images{Etcd: Image(repository, version), Guard: guard}
}

// templateGeneration is bumped only when a release changes how members are rendered in a way
// that must reach running members (a new flag, a new probe). Everything else in a new release
// leaves running members alone.
const templateGeneration = 1

// hashLength is how many bytes of the SHA-256 end up in the annotation: 80 bits is far beyond
// any chance of two templates of one member colliding, and keeps the value readable.
const hashLength = 10

// TemplateHash digests exactly the restart-relevant part of a member template
// (docs/design/rolling-updates.md): the etcd image and version, for PVC members the guard image,
// effective resources, effective etcd options (including the default quota), effective affinity
// (including the default anti-affinity), topology spread constraints, node selector, tolerations,
// priority class, the effective Pod security context, the storage medium and, for Memory members,
// the tmpfs size, the TLS Secret references and modes, the CA digests and templateGeneration.
//
// It leaves out what is applied in place or only matters once: additionalMetadata,
// imagePullSecrets, initialCluster, clusterToken, bootstrap, dormant, restore, and the PVC size
// (which grows by expansion, not restart; it still reaches the hash through the default quota
// when that follows the size). The initial cluster state is not an input at all, so a seed is
// never restarted just because its cluster has formed.
//
// Effective values are hashed, not raw ones, so spelling a default out ("100m" requests, an
// explicit 65532 user) does not restart anyone; and values are serialised canonically (JSON with
// sorted map keys, canonical quantities), so map order and API round trips never change the
// result.
//
// The guard image counts only for members that run the guard (Guarded): a Memory member's Pod
// does not change with it, so an operator upgrade must not restart it. It is omitted when empty,
// so an operator without a guard computes the hashes it computed before the guard existed.
func TemplateHash(spec *etcdv1alpha2.EtcdMemberSpec, images Images, ca CADigests) string {
	in := hashInput{
		Generation:                templateGeneration,
		Image:                     images.Etcd,
		Version:                   spec.Version,
		Medium:                    spec.Storage.Medium,
		Resources:                 EffectiveResources(spec.Resources),
		Options:                   effectiveOptionsOf(spec.Options, StorageSize(spec.Storage)),
		Affinity:                  EffectiveAffinity(spec.Affinity, spec.ClusterName),
		TopologySpreadConstraints: spec.TopologySpreadConstraints,
		NodeSelector:              spec.NodeSelector,
		Tolerations:               spec.Tolerations,
		PriorityClassName:         spec.PriorityClassName,
		PodSecurityContext:        PodSecurityContext(spec.PodSecurityContext),
		TLS:                       hashTLSOf(spec.TLS, ca),
	}
	if spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		in.MemorySize = canonicalQuantity(StorageSize(spec.Storage))
	}
	if guardedSpec(spec, images.Guard) {
		in.GuardImage = images.Guard
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Unreachable: every field is a string, a number, a bool or an API type with a
		// total JSON encoding.
		panic("desired: encoding the template hash input: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:hashLength])
}

// hashInput is the canonical form the template hash is computed over. Field names are part of
// the hash: renaming one restarts every member, like bumping templateGeneration.
type hashInput struct {
	Generation                int                               `json:"generation"`
	Image                     string                            `json:"image"`
	GuardImage                string                            `json:"guardImage,omitempty"`
	Version                   string                            `json:"version"`
	Medium                    etcdv1alpha2.StorageMedium        `json:"medium,omitempty"`
	MemorySize                string                            `json:"memorySize,omitempty"`
	Resources                 corev1.ResourceRequirements       `json:"resources"`
	Options                   effectiveOptions                  `json:"options"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	NodeSelector              map[string]string                 `json:"nodeSelector,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	PriorityClassName         string                            `json:"priorityClassName,omitempty"`
	PodSecurityContext        *corev1.PodSecurityContext        `json:"podSecurityContext"`
	TLS                       hashTLS                           `json:"tls"`
}

// effectiveOptions are the etcd options as rendered, defaults applied.
type effectiveOptions struct {
	QuotaBackendBytes       int64  `json:"quotaBackendBytes,omitempty"`
	AutoCompactionMode      string `json:"autoCompactionMode,omitempty"`
	AutoCompactionRetention string `json:"autoCompactionRetention,omitempty"`
	SnapshotCount           int64  `json:"snapshotCount,omitempty"`
}

func effectiveOptionsOf(o *etcdv1alpha2.EtcdOptions, size resource.Quantity) effectiveOptions {
	var e effectiveOptions
	if q, ok := EffectiveQuotaBackendBytes(o, size); ok {
		e.QuotaBackendBytes = q
	}
	if o == nil {
		return e
	}
	e.AutoCompactionMode = string(o.AutoCompactionMode)
	e.AutoCompactionRetention = o.AutoCompactionRetention
	if o.SnapshotCount != nil && *o.SnapshotCount > 0 {
		e.SnapshotCount = *o.SnapshotCount
	}
	return e
}

// hashTLS is the TLS part of a template: which Secrets are mounted, how they are used, and the
// digests of their CA bundles.
type hashTLS struct {
	ClientSecret   string `json:"clientSecret,omitempty"`
	ClientMTLS     bool   `json:"clientMTLS,omitempty"`
	ClientCADigest string `json:"clientCADigest,omitempty"`
	PeerSecret     string `json:"peerSecret,omitempty"`
	PeerAutoTLS    bool   `json:"peerAutoTLS,omitempty"`
	PeerCADigest   string `json:"peerCADigest,omitempty"`
}

func hashTLSOf(t *etcdv1alpha2.EtcdMemberTLS, ca CADigests) hashTLS {
	h := hashTLS{ClientCADigest: ca.Client, PeerCADigest: ca.Peer}
	if t == nil {
		return h
	}
	if t.ClientServerSecretRef != nil {
		h.ClientSecret = t.ClientServerSecretRef.Name
	}
	h.ClientMTLS = t.ClientMTLS
	if t.PeerSecretRef != nil {
		h.PeerSecret = t.PeerSecretRef.Name
	}
	h.PeerAutoTLS = t.PeerAutoTLS
	return h
}

// canonicalQuantity renders a quantity in canonical form, so "1024Mi" and "1Gi" hash alike.
func canonicalQuantity(q resource.Quantity) string {
	if q.IsZero() {
		return ""
	}
	c := q.DeepCopy()
	return c.String()
}
