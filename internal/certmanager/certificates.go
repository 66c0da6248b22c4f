package certmanager

import (
	"net"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// GroupVersionKind is the kind of the objects Certificates renders.
var GroupVersionKind = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// ServerCertificateName names the client API (2379) Certificate. Each Certificate writes the
// Secret SecretName(its name).
func ServerCertificateName(cluster string) string { return cluster + "-server" }

// PeerCertificateName names the peer API (2380) Certificate.
func PeerCertificateName(cluster string) string { return cluster + "-peer" }

// OperatorClientCertificateName names the Certificate of the operator's client identity.
func OperatorClientCertificateName(cluster string) string { return cluster + "-operator-client" }

// SecretName is the Secret a Certificate named certificate writes (docs/api.md, "Objects and
// their names").
func SecretName(certificate string) string { return certificate + "-tls" }

// Key usages (cert-manager's spelling). Server and peer certificates carry both server and
// client auth: etcd's gateway and a peer dial with the certificate they serve with.
var (
	serverUsages = []string{"digital signature", "key encipherment", "server auth", "client auth"}
	clientUsages = []string{"digital signature", "key encipherment", "client auth"}
)

// keySize is the RSA key size of every Certificate: RSA-2048, which every etcd client accepts.
const keySize = 2048

// Certificates renders the Certificates spec.tls of c asks cert-manager for, in the order
// server, peer, operator client; none when it asks for none. domain is the cluster's DNS domain
// (--cluster-domain): the SANs carry every name with and without it.
func Certificates(c *etcdv1alpha2.EtcdCluster, domain string) []*unstructured.Unstructured {
	t := c.Spec.TLS
	if t == nil {
		return nil
	}
	var out []*unstructured.Unstructured
	if t.Client != nil && t.Client.CertManager != nil {
		names := desired.ServerCertificateNames(c.Name, c.Namespace, domain)
		out = append(out, certificate(c, ServerCertificateName(c.Name), t.Client.CertManager.ServerIssuerRef, names, "", serverUsages))
	}
	if t.Peer != nil && t.Peer.CertManager != nil {
		names := desired.PeerCertificateNames(c.Name, c.Namespace, domain)
		out = append(out, certificate(c, PeerCertificateName(c.Name), t.Peer.CertManager.IssuerRef, names, "", serverUsages))
	}
	if t.Client != nil && t.Client.CertManager != nil && t.Client.CertManager.OperatorClientIssuerRef != nil {
		out = append(out, certificate(c, OperatorClientCertificateName(c.Name), *t.Client.CertManager.OperatorClientIssuerRef,
			desired.CertificateNames{}, desired.OperatorClientCommonName, clientUsages))
	}
	return out
}

// certificate renders one Certificate. Labels go on the Certificate and, through
// secretTemplate, on the Secret cert-manager writes, so both are found by the cluster label.
func certificate(c *etcdv1alpha2.EtcdCluster, name string, issuer etcdv1alpha2.IssuerReference,
	names desired.CertificateNames, commonName string, usages []string) *unstructured.Unstructured {
	kind := issuer.Kind
	if kind == "" {
		kind = "Issuer" // the API's default, for objects that did not pass through it
	}
	spec := map[string]any{
		"secretName":     SecretName(name),
		"secretTemplate": map[string]any{"labels": stringMap(desired.ClusterLabels(c.Name))},
		"issuerRef":      map[string]any{"group": GroupVersionKind.Group, "kind": kind, "name": issuer.Name},
		"privateKey":     map[string]any{"algorithm": "RSA", "size": int64(keySize)},
		"usages":         anySlice(usages),
	}
	if commonName != "" {
		spec["commonName"] = commonName
	}
	if len(names.DNSNames) > 0 {
		spec["dnsNames"] = anySlice(names.DNSNames)
	}
	if len(names.IPAddresses) > 0 {
		spec["ipAddresses"] = ips(names.IPAddresses)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(GroupVersionKind)
	u.SetNamespace(c.Namespace)
	u.SetName(name)
	u.SetLabels(desired.ClusterLabels(c.Name))
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(c, etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))})
	return u
}

// anySlice converts to the []any that unstructured content holds.
func anySlice(in []string) []any {
	out := make([]any, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}

// ips renders IP SANs as cert-manager reads them.
func ips(in []net.IP) []any {
	out := make([]any, len(in))
	for i, ip := range in {
		out[i] = ip.String()
	}
	return out
}

// stringMap converts to the map[string]any that unstructured content holds.
func stringMap(in map[string]string) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
