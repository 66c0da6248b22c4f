package legacyfixture

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
func tlsSecrets(o Options, cas map[string][]byte) ([]*corev1.Secret, error) {
	if !o.serverTLS() {
		return nil, nil
	}
	c := cluster(o)
	headless := legacy.HeadlessServiceName(c) + "." + o.Namespace + ".svc"
	clientSvc := legacy.ClientServiceName(c)
	var out []*corev1.Secret
	if o.peerTLS() {
		// Both wildcards, as the operator's own peer certificates (docs/tls.md): under
		// --peer-client-cert-auth etcd checks a dialling peer's certificate against the name
		// its address resolves back to, which carries the cluster domain.
		s, err := issue(o, cas, CAPeer, rolePeerCA, rolePeer, testpki.Leaf{
			CommonName: o.Name + "-peer", DNSNames: []string{"*." + headless, "*." + headless + "." + clusterDomain}, Usages: testpki.Both,
		})
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	s, err := issue(o, cas, CAServer, roleServerCA, roleServer, testpki.Leaf{
		CommonName: o.Name + "-server",
		DNSNames: []string{"*." + headless, "*." + headless + "." + clusterDomain, clientSvc, clientSvc + "." + o.Namespace,
			clientSvc + "." + o.Namespace + ".svc", "localhost"},
		Usages: testpki.Both,
	})
	if err != nil {
		return nil, err
	}
	out = append(out, s...)
	if o.clientTLS() {
		// The legacy operator's identity; CN root is what etcd maps a client certificate to.
		s, err := issue(o, cas, CAClient, roleClientCA, roleClient, testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	return out, nil
}

// issue makes a CA, its ca.crt Secret and one certificate Secret signed by it.
func issue(o Options, cas map[string][]byte, caRole, caSecretRole, certSecretRole string, leaf testpki.Leaf) ([]*corev1.Secret, error) {
	ca, err := testpki.NewCA(o.Name + "-" + caRole + "-ca")
	if err != nil {
		return nil, fmt.Errorf("legacy fixture: %s CA: %w", caRole, err)
	}
	pair, err := ca.Issue(leaf)
	if err != nil {
		return nil, fmt.Errorf("legacy fixture: %s certificate: %w", caRole, err)
	}
	cas[caRole] = ca.CertPEM
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
