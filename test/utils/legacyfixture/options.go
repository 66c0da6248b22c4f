package legacyfixture

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// Variant selects the legacy TLS layout. The legacy operator always serves the peer API over
// HTTPS: without a peer Secret it runs --peer-auto-tls, so every variant but TLS has
// self-signed, unauthenticated peers.
type Variant string

const (
	// Plaintext has no security section: plain HTTP for clients, --peer-auto-tls for peers.
	Plaintext Variant = "plaintext"
	// PeerAutoTLS serves clients over TLS (serverSecret and serverTrustedCASecret, no client
	// certificates) and keeps --peer-auto-tls: the layout whose peers the migration can only
	// carry over as peer-auto-tls.
	PeerAutoTLS Variant = "peer-auto-tls"
	// TLS is the six-Secret layout: peer mutual TLS under its own CA, server TLS, and client
	// certificate authentication under a separate client CA.
	TLS Variant = "tls"
)

// Options describe the legacy cluster to build. Zero values take the defaults in parentheses.
type Options struct {
	// Name (etcd) and Namespace (default) of the legacy EtcdCluster.
	Name, Namespace string
	// Replicas (3) is spec.replicas and the StatefulSet's replica count.
	Replicas int32
	// Image (legacy.DefaultImage) is the etcd image; another image is set through
	// podTemplate, as a legacy user would.
	Image string
	// Variant (Plaintext) is the TLS layout.
	Variant Variant
	// Auth sets security.enableAuth (see the package comment).
	Auth bool
	// StorageClass is the claim template's storageClassName; empty leaves it unset.
	StorageClass string
	// StorageSize (legacy.DefaultStorageSize) is the claim template's request.
	StorageSize resource.Quantity
	// EmptyDir replaces the claim template with an emptyDir, a layout etcd-migrate refuses.
	EmptyDir bool
	// PDB adds a podDisruptionBudgetTemplate with the legacy default budget (and so a PDB).
	PDB bool
	// Options are spec.options, appended to the flags as the legacy operator does.
	Options map[string]string
	// HeadlessServiceName, when set, is headlessServiceTemplate.metadata.name.
	HeadlessServiceName string
	// CAInCertSecrets also writes ca.crt into the certificate Secrets, as cert-manager does;
	// otherwise they hold tls.crt and tls.key only and the CAs live in the *TrustedCA Secrets.
	CAInCertSecrets bool
	// Formed says the cluster has reached its first quorum: the state ConfigMap says
	// "existing" and the Ready condition is True. Apply a cluster unformed (the default), so
	// that its members bootstrap, and formed to inspect what a running legacy cluster leaves.
	Formed bool
	// UID is the legacy EtcdCluster's UID in ownerReferences until Apply learns the real one.
	UID types.UID
}

func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = "etcd"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Replicas == 0 {
		o.Replicas = legacy.DefaultReplicas
	}
	if o.Image == "" {
		o.Image = legacy.DefaultImage
	}
	if o.Variant == "" {
		o.Variant = Plaintext
	}
	if o.StorageSize.IsZero() {
		o.StorageSize = legacy.DefaultStorageSize.DeepCopy()
	}
	if o.UID == "" {
		o.UID = types.UID("legacy-" + o.Namespace + "-" + o.Name)
	}
	switch o.Variant {
	case Plaintext, PeerAutoTLS, TLS:
	default:
		return o, fmt.Errorf("legacy fixture: unknown variant %q", o.Variant)
	}
	if o.Replicas < 0 {
		return o, fmt.Errorf("legacy fixture: replicas %d < 0", o.Replicas)
	}
	return o, nil
}

// Secret names of the TLS layouts, <cluster>-<role>.
func (o Options) secretName(role string) string { return o.Name + "-" + role }

func (o Options) serverTLS() bool { return o.Variant == PeerAutoTLS || o.Variant == TLS }

func (o Options) peerTLS() bool { return o.Variant == TLS }

func (o Options) clientTLS() bool { return o.Variant == TLS }
