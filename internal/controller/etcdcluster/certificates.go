package etcdcluster

import (
	"crypto/x509"
	"fmt"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/pki"
)

// This file says, in pure code, what each TLS Secret of a cluster must hold: the expectations
// the user's own certificates are checked against (docs/tls.md, "Validation of your own
// certificates") and the Secrets managed TLS issues (docs/tls.md, "Operator-managed
// certificates").

// defaultClusterDomain is the cluster domain when the Reconciler was given none
// (--cluster-domain's default).
const defaultClusterDomain = "cluster.local"

// newMemberProbe stands for the name of a member not created yet. A certificate that covers it
// covers whatever name GenerateName draws: one that lists today's members by name would fail the
// first replacement's handshakes.
const newMemberProbe = "xxxxx"

// Extended key usages (docs/tls.md, "Names in the certificates"): a member's server and peer
// certificates also dial (etcd's gateway dials its own client port, and every peer dials the
// others), the operator's certificate only dials.
var (
	memberUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	clientUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
)

// Roles of the certificates, as messages name them.
const (
	roleServer         = "server"
	rolePeer           = "peer"
	roleOperatorClient = "operator client"
)

// byoExpectations are what the TLS Secrets the user names must hold; nil when the cluster names
// none. Secrets cert-manager or the operator issue are not checked: their issuer is given the
// right names and usages.
func byoExpectations(c *etcdv1alpha2.EtcdCluster) []pki.Expectation {
	t := c.Spec.TLS
	if t == nil {
		return nil
	}
	headless := desired.HeadlessServiceName(c.Name) + "." + c.Namespace + ".svc"
	member := pki.HostCheck{
		Host: desired.MemberHost(c.Name+"-"+newMemberProbe, desired.HeadlessServiceName(c.Name), c.Namespace),
		What: "a new member's name", SAN: "*." + headless,
	}
	var out []pki.Expectation
	if cl := t.Client; cl != nil && cl.ServerSecretRef != nil {
		server := cl.ServerSecretRef.Name
		client := desired.ClientServiceName(c.Name) + "." + c.Namespace + ".svc"
		out = append(out, pki.Expectation{Secret: server, Role: roleServer, NeedCA: true, TrustedBy: server, Usages: memberUsages,
			Hosts: []pki.HostCheck{member, {Host: client, What: "the client Service", SAN: client}}})
		if cl.OperatorClientSecretRef != nil {
			out = append(out, pki.Expectation{Secret: cl.OperatorClientSecretRef.Name, Role: roleOperatorClient, TrustedBy: server, Usages: clientUsages})
		}
	}
	if p := t.Peer; p != nil && p.SecretRef != nil {
		out = append(out, pki.Expectation{Secret: p.SecretRef.Name, Role: rolePeer, NeedCA: true, TrustedBy: p.SecretRef.Name, Usages: memberUsages,
			Hosts: []pki.HostCheck{member}})
	}
	return out
}

// Names of the managed TLS Secrets (docs/api.md, "Objects and their names"). The leaves have the
// names cert-manager mode gives its Secrets, so members mount them the same way.
func caSecretName(cluster string) string             { return cluster + "-ca" }
func peerCASecretName(cluster string) string         { return cluster + "-peer-ca" }
func serverSecretName(cluster string) string         { return cluster + "-server-tls" }
func peerSecretName(cluster string) string           { return cluster + "-peer-tls" }
func operatorClientSecretName(cluster string) string { return cluster + "-operator-client-tls" }

// managedSecrets are the CA and leaf Secrets of a cluster under spec.tls.managed, CAs first. Two
// CAs: the client CA signs the server certificate and every client certificate, the operator's
// and the ones users sign for their applications; the peer CA signs peer certificates only, so
// that no client certificate is ever accepted on the peer port.
func managedSecrets(c *etcdv1alpha2.EtcdCluster, domain string) ([]pki.CASpec, []pki.LeafSpec) {
	who := c.Namespace + "/" + c.Name
	cas := []pki.CASpec{
		{Secret: caSecretName(c.Name), CommonName: fmt.Sprintf("etcd-operator client CA of %s", who)},
		{Secret: peerCASecretName(c.Name), CommonName: fmt.Sprintf("etcd-operator peer CA of %s", who)},
	}
	server := desired.ServerCertificateNames(c.Name, c.Namespace, domain)
	peer := desired.PeerCertificateNames(c.Name, c.Namespace, domain)
	leaves := []pki.LeafSpec{
		{Secret: serverSecretName(c.Name), CA: caSecretName(c.Name), Want: pki.Requirement{
			CommonName: c.Name + "-server", DNSNames: server.DNSNames, IPAddresses: server.IPAddresses, Usages: memberUsages}},
		{Secret: peerSecretName(c.Name), CA: peerCASecretName(c.Name), Want: pki.Requirement{
			CommonName: c.Name + "-peer", DNSNames: peer.DNSNames, IPAddresses: peer.IPAddresses, Usages: memberUsages}},
		{Secret: operatorClientSecretName(c.Name), CA: caSecretName(c.Name), Want: pki.Requirement{
			CommonName: desired.OperatorClientCommonName, Usages: clientUsages}},
	}
	return cas, leaves
}

// managedTLS reports whether the operator issues the cluster's certificates.
func managedTLS(c *etcdv1alpha2.EtcdCluster) bool {
	return c.Spec.TLS != nil && c.Spec.TLS.Managed != nil
}
