package translate

import (
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// GeneratedSecret is a Secret etcd-migrate creates. It holds no key material: Keys say where
// each key's bytes come from, and only a CA bundle (public) is carried, because the template
// hash needs its digest.
type GeneratedSecret struct {
	Name string            `json:"name"`
	Type corev1.SecretType `json:"type"`
	// Purpose says what the Secret is for.
	Purpose string `json:"purpose"`
	// Keys say how each data key is filled.
	Keys []SecretKey `json:"keys"`
	// CABundle is the exact ca.crt to write, nil when the Secret has none.
	CABundle []byte `json:"-"`
	// CADigest is desired.CADigest(CABundle).
	CADigest string `json:"caDigest,omitempty"`
}

// SecretKey is one data key of a generated Secret: copied from keys of existing Secrets
// (concatenated, for a CA bundle), or a fixed or random value.
type SecretKey struct {
	Key string `json:"key"`
	// From are the Secret/key sources, "<secret>/<key>", concatenated in order.
	From []string `json:"from,omitempty"`
	// Value is a fixed, non-secret value (a user name).
	Value string `json:"value,omitempty"`
	// Random asks for a random password, made by the executor and never printed.
	Random bool `json:"random,omitempty"`
}

// translateTLS maps the six legacy Secrets onto spec.tls. This API has one ca.crt per Secret,
// both to verify the server and, under mutual TLS, to verify clients; when the legacy Secrets
// keep CAs apart, a combined Secret is generated and the widened trust is warned about.
func (t *translator) translateTLS() {
	tls := t.in.Cluster.TLS()
	out := &etcdv1alpha2.EtcdClusterTLS{}
	t.out.Security.ClientTLS, t.out.Security.PeerTLS = "none", "none"
	if tls.ServerSecret != "" {
		out.Client = t.clientTLS(tls)
	} else if tls.ClientSecret != "" {
		t.warn(WarnClientSecretDropped, "spec.security.tls.clientSecret",
			"client certificate authentication without a server certificate is not TLS (the members serve plain HTTP); the client Secrets are dropped", "")
	}
	if tls.PeerSecret != "" {
		out.Peer = t.peerTLS(tls)
	} else if t.peerHTTPS() {
		t.out.Security.PeerAutoTLS, t.out.Security.PeerTLS = true, "auto"
		t.warnSecurity(WarnPeerAutoTLS, "spec.security.tls.peerSecret",
			"the members run --peer-auto-tls: peer traffic is encrypted but unauthenticated, so anything that reaches port 2380 can join raft and read every key; the cluster keeps it (annotation peer-auto-tls) because its members cannot switch one at a time",
			"restrict port 2380 with a NetworkPolicy; for authenticated peers, restore a backup into a new cluster with spec.tls.peer")
	}
	if out.Client != nil || out.Peer != nil {
		t.spec.TLS = out
	}
}

// peerHTTPS reports whether peers talk HTTPS: the first voting member's persisted peer URL says
// so, else the listener flag (always https in the legacy layout). A learner does not speak for
// the voters (one added by hand may have any URL, and etcd lists it first when its ID is
// lowest); it is refused for itself (LearnerPresent), and must not turn the voters' peer URLs
// into PeerURLLayout refusals whose fix would break them (docs/migration.md, "Refusals").
func (t *translator) peerHTTPS() bool {
	if e := t.in.Etcd; e != nil {
		for _, m := range e.Members {
			if !m.IsLearner && len(m.PeerURLs) > 0 {
				return strings.HasPrefix(m.PeerURLs[0], "https://")
			}
		}
	}
	return strings.HasPrefix(t.flags["listen-peer-urls"], "https://") || t.flags["peer-auto-tls"] == "true"
}

func (t *translator) clientTLS(tls legacy.TLSSpec) *etcdv1alpha2.ClientTLS {
	server, ok := t.secret("spec.security.tls.serverSecret", tls.ServerSecret, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	if !ok {
		return nil
	}
	var sources []string
	var bundle []byte
	switch {
	case tls.ServerTrustedCASecret != "":
		ca, ok := t.secret("spec.security.tls.serverTrustedCASecret", tls.ServerTrustedCASecret, keyCA)
		if !ok {
			return nil
		}
		sources, bundle = []string{ca.Name + "/" + keyCA}, ca.CA
	case server.has(keyCA):
		sources, bundle = []string{server.Name + "/" + keyCA}, server.CA
	default:
		t.refuse(RefusalServerCAUnknown, "spec.security.tls.serverTrustedCASecret",
			fmt.Sprintf("no CA for the server certificate: serverTrustedCASecret is unset and Secret %s has no ca.crt, and this operator must verify etcd's certificate", server.Name),
			"add ca.crt to "+server.Name+" or set serverTrustedCASecret in the legacy spec, then re-run")
		return nil
	}
	out := &etcdv1alpha2.ClientTLS{}
	t.out.Security.ClientTLS = "tls"
	if tls.ClientSecret != "" {
		sources, bundle = t.mergeClientCA(tls, sources, bundle)
		out.OperatorClientSecretRef = &corev1.LocalObjectReference{Name: tls.ClientSecret}
		t.out.Security.ClientTLS = "mtls"
	}
	name := t.useOrCombine(server, sources, bundle, "server", "client API certificate with the CA bundle etcd and the operator trust")
	t.checkSANs(server, name, "server")
	t.out.CADigests.Client = desired.CADigest(bundle)
	out.ServerSecretRef = &corev1.LocalObjectReference{Name: name}
	return out
}

// mergeClientCA adds the client CA to the server CA bundle under mutual TLS, warning when that
// widens trust.
func (t *translator) mergeClientCA(tls legacy.TLSSpec, sources []string, bundle []byte) ([]string, []byte) {
	if _, ok := t.secret("spec.security.tls.clientSecret", tls.ClientSecret, corev1.TLSCertKey, corev1.TLSPrivateKeyKey); !ok {
		return sources, bundle
	}
	ca, ok := t.secret("spec.security.tls.clientTrustedCASecret", tls.ClientTrustedCASecret, keyCA)
	if !ok || bytes.Equal(bytes.TrimSpace(ca.CA), bytes.TrimSpace(bundle)) {
		return sources, bundle
	}
	merge := fmt.Sprintf("client API: the server CA (%s) and the client CA (%s) become one ca.crt", strings.Join(sources, ", "), ca.Name+"/"+keyCA)
	t.out.Security.CAMerges = append(t.out.Security.CAMerges, merge)
	t.warnSecurity(WarnCAMerge, "spec.security.tls.clientTrustedCASecret",
		merge+": etcd will also accept client certificates the server CA signed, and the operator will accept server certificates the client CA signed",
		"issue client and server certificates from one CA you control to keep the trust set as it was")
	return append(sources, ca.Name+"/"+keyCA), joinPEM(bundle, ca.CA)
}

func (t *translator) peerTLS(tls legacy.TLSSpec) *etcdv1alpha2.PeerTLS {
	peer, ok := t.secret("spec.security.tls.peerSecret", tls.PeerSecret, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	if !ok {
		return nil
	}
	ca, ok := t.secret("spec.security.tls.peerTrustedCASecret", tls.PeerTrustedCASecret, keyCA)
	if !ok {
		return nil
	}
	t.out.Security.PeerTLS = "mtls"
	name := t.useOrCombine(peer, []string{ca.Name + "/" + keyCA}, ca.CA, "peer", "peer certificate with the peer CA")
	t.checkSANs(peer, name, "peer")
	t.out.CADigests.Peer = desired.CADigest(ca.CA)
	return &etcdv1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: name}}
}

// useOrCombine returns the certificate Secret itself when its ca.crt already is the bundle,
// else the name of a generated <c>-migrated-<role>-tls holding its pair and the bundle.
func (t *translator) useOrCombine(cert SecretSummary, caSources []string, bundle []byte, role, purpose string) string {
	if cert.has(keyCA) && bytes.Equal(cert.CA, bundle) {
		return cert.Name
	}
	name := t.in.Cluster.Name + "-migrated-" + role + "-tls"
	t.out.Secrets = append(t.out.Secrets, GeneratedSecret{
		Name: name, Type: corev1.SecretTypeTLS, Purpose: purpose,
		Keys: []SecretKey{
			{Key: corev1.TLSCertKey, From: []string{cert.Name + "/" + corev1.TLSCertKey}},
			{Key: corev1.TLSPrivateKeyKey, From: []string{cert.Name + "/" + corev1.TLSPrivateKeyKey}},
			{Key: keyCA, From: caSources},
		},
		CABundle: bundle, CADigest: desired.CADigest(bundle),
	})
	return name
}

// secret returns the named Secret's summary when it exists with every key, refusing otherwise:
// the legacy Pods mount it, so a missing one means the layout is not what it seems.
func (t *translator) secret(field, name string, keys ...string) (SecretSummary, bool) {
	if name == "" {
		t.refuse(RefusalTLSSecretInvalid, field, "the field is empty while the TLS layout needs it", "set it in the legacy spec, then re-run")
		return SecretSummary{}, false
	}
	s, ok := t.in.Secrets[name]
	if !ok {
		t.refuse(RefusalTLSSecretInvalid, field, "Secret "+name+" does not exist", "restore the Secret, then re-run")
		return SecretSummary{}, false
	}
	for _, k := range keys {
		if !s.has(k) {
			t.refuse(RefusalTLSSecretInvalid, field, "Secret "+name+" has no "+k, "add "+k+" to "+name+", then re-run")
			return SecretSummary{}, false
		}
	}
	return s, true
}

// checkSANs flags certificates that do not cover members added later: they are named
// <c>-<random> under the Service <c>, and the legacy certificates usually name the legacy
// headless Service only (docs/tls.md, "Names in the certificates"). The fix names every Secret
// that holds the certificate after the adoption: the legacy one the adopted Pods mount and
// adoptedAs, the one the EtcdCluster names, when it is a copy (docs/migration.md,
// "Certificates after a TLS migration").
func (t *translator) checkSANs(s SecretSummary, adoptedAs, role string) {
	c := t.in.Cluster
	want := "*." + desired.HeadlessServiceName(c.Name) + "." + c.Namespace + ".svc"
	if len(s.CertDNSNames) == 0 || contains(s.CertDNSNames, want) {
		return
	}
	into := "Secret " + s.Name
	if adoptedAs != s.Name {
		into = "Secrets " + s.Name + " (the adopted Pods mount it) and " + adoptedAs + " (members started later mount it)"
	}
	t.warn(WarnCertificateSANs, "Secret "+s.Name,
		fmt.Sprintf("the %s certificate does not name %s: adopted members keep working, but every member added later (scale-up, replacement) fails TLS, and the operator holds it with CertificateInvalid", role, want),
		"re-issue it from the same CA with the SANs of docs/tls.md next to its legacy names, into "+into+", and wait until every member serves it before scaling or replacing members (docs/migration.md, \"Certificates after a TLS migration\")")
}

// joinPEM concatenates two PEM bundles with exactly one newline between them.
func joinPEM(a, b []byte) []byte {
	out := append([]byte{}, bytes.TrimRight(a, "\n")...)
	out = append(out, '\n')
	return append(out, b...)
}
