package legacyfixture

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
)

// clusterDomain is the cluster DNS domain the legacy certificates name (Kubernetes' default).
const clusterDomain = "cluster.local"

// Roles of the TLS Secrets; a Secret is named <cluster>-<role>.
const (
	rolePeerCA   = "peer-ca"
	rolePeer     = "peer-tls"
	roleServerCA = "server-ca"
	roleServer   = "server-tls"
	roleClientCA = "client-ca"
	roleClient   = "client-tls"
)

// CA roles in Set.CAs.
const (
	CAPeer   = "peer"
	CAServer = "server"
	CAClient = "client"
)

// tlsSecrets issues the variant's certificates, one CA per plane, the way a user of the legacy
// operator would: leaf names enumerate the legacy headless and client Services (wildcards only
// for the members), which is exactly what later breaks new members' TLS and what the plan flags.
// The CAs it makes are left in issuers by role.
func tlsSecrets(o Options, issuers map[string]*testpki.CA) ([]*corev1.Secret, error) {
	if !o.serverTLS() {
		return nil, nil
	}
	var out []*corev1.Secret
	if o.peerTLS() {
		s, err := issue(o, issuers, CAPeer, rolePeerCA, rolePeer, peerLeaf(o, nil))
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	s, err := issue(o, issuers, CAServer, roleServerCA, roleServer, serverLeaf(o, nil))
	if err != nil {
		return nil, err
	}
	out = append(out, s...)
	if o.clientTLS() {
		// The legacy operator's identity; CN root is what etcd maps a client certificate to.
		s, err := issue(o, issuers, CAClient, roleClientCA, roleClient, testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	return out, nil
}

// peerLeaf names both wildcards of the legacy headless Service, as the operator's own peer
// certificates do (docs/tls.md): under --peer-client-cert-auth etcd checks a dialling peer's
// certificate against the name its address resolves back to, which carries the cluster domain.
func peerLeaf(o Options, extra []string) testpki.Leaf {
	headless := legacy.HeadlessServiceName(cluster(o)) + "." + o.Namespace + ".svc"
	return testpki.Leaf{CommonName: o.Name + "-peer", Usages: testpki.Both,
		DNSNames: union([]string{"*." + headless, "*." + headless + "." + clusterDomain}, extra)}
}

// serverLeaf names the legacy members by wildcard and the legacy client Service.
func serverLeaf(o Options, extra []string) testpki.Leaf {
	c := cluster(o)
	headless := legacy.HeadlessServiceName(c) + "." + o.Namespace + ".svc"
	clientSvc := legacy.ClientServiceName(c)
	return testpki.Leaf{CommonName: o.Name + "-server", Usages: testpki.Both,
		DNSNames: union([]string{"*." + headless, "*." + headless + "." + clusterDomain, clientSvc, clientSvc + "." + o.Namespace,
			clientSvc + "." + o.Namespace + ".svc", "localhost"}, extra)}
}

// Reissued re-issues the server certificate, and under peer TLS the peer certificate, from the
// same CAs with the names of this operator (docs/tls.md, "Names in the certificates") next to
// the legacy ones: what the migration runbook asks of a user whose plan warned CertificateSANs
// before members are added or rolled (docs/migration.md). The result maps each role, "server"
// and "peer", to the tls.crt and tls.key to put in every Secret that holds that certificate.
func (s *Set) Reissued() (map[string]map[string][]byte, error) {
	o := s.Options
	out := map[string]map[string][]byte{}
	reissue := func(role string, leaf testpki.Leaf) error {
		ca, ok := s.issuers[role]
		if !ok {
			return nil
		}
		pair, err := ca.Issue(leaf)
		if err != nil {
			return fmt.Errorf("legacy fixture: re-issuing the %s certificate: %w", role, err)
		}
		out[role] = map[string][]byte{corev1.TLSCertKey: pair.CertPEM, corev1.TLSPrivateKeyKey: pair.KeyPEM}
		return nil
	}
	server := desired.ServerCertificateNames(o.Name, o.Namespace, clusterDomain)
	leaf := serverLeaf(o, server.DNSNames)
	leaf.IPAddresses = server.IPAddresses
	if err := reissue(CAServer, leaf); err != nil {
		return nil, err
	}
	if err := reissue(CAPeer, peerLeaf(o, desired.PeerCertificateNames(o.Name, o.Namespace, clusterDomain).DNSNames)); err != nil {
		return nil, err
	}
	return out, nil
}

// union is a followed by the names of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// issue makes a CA, its ca.crt Secret and one certificate Secret signed by it.
func issue(o Options, issuers map[string]*testpki.CA, caRole, caSecretRole, certSecretRole string, leaf testpki.Leaf) ([]*corev1.Secret, error) {
	ca, err := testpki.NewCA(o.Name + "-" + caRole + "-ca")
	if err != nil {
		return nil, fmt.Errorf("legacy fixture: %s CA: %w", caRole, err)
	}
	pair, err := ca.Issue(leaf)
	if err != nil {
		return nil, fmt.Errorf("legacy fixture: %s certificate: %w", caRole, err)
	}
	issuers[caRole] = ca
	caSecret := secret(o, caSecretRole, corev1.SecretTypeOpaque, map[string][]byte{"ca.crt": ca.CertPEM})
	data := map[string][]byte{corev1.TLSCertKey: pair.CertPEM, corev1.TLSPrivateKeyKey: pair.KeyPEM}
	if o.CAInCertSecrets {
		data["ca.crt"] = ca.CertPEM
	}
	return []*corev1.Secret{caSecret, secret(o, certSecretRole, corev1.SecretTypeTLS, data)}, nil
}

func secret(o Options, role string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: o.secretName(role), Namespace: o.Namespace},
		Type:       typ,
		Data:       data,
	}
}
