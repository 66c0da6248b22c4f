//go:build e2e

package lifecycle

import (
	"crypto/tls"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
)

// clusterAccess holds, by "<namespace>/<cluster>", the TLS configuration the tests reach a TLS
// cluster's etcd with; the helpers that dial members (memberList, dialVoters) use it.
var clusterAccess sync.Map

// accessOf is the TLS configuration registered for cluster name; nil for plaintext.
func accessOf(f *framework.Test, name string) *tls.Config {
	if t, ok := clusterAccess.Load(f.Namespace + "/" + name); ok {
		return t.(*tls.Config).Clone()
	}
	return nil
}

// byoPKI is what a user who brings their own certificates creates (docs/tls.md): a client CA
// that signs the server certificate and the client certificates, a separate peer CA, and the
// Secrets. The test's own client certificate has common name root, which etcd maps to user
// root once auth is on; user is a client certificate of no etcd user, for password logins.
type byoPKI struct {
	clientCA, peerCA *testpki.CA
	root, user       testpki.Pair
	serverName       string
}

// newBYOPKI issues the certificates for cluster name and creates the Secrets <name>-server,
// <name>-peer and <name>-operator-client; it registers the root client for the helpers.
func newBYOPKI(f *framework.Test, name string) *byoPKI {
	f.T.Helper()
	must := func(p testpki.Pair, err error) testpki.Pair {
		f.T.Helper()
		if err != nil {
			f.T.Fatal(err)
		}
		return p
	}
	clientCA, err := testpki.NewCA(name + "-client-ca")
	if err != nil {
		f.T.Fatal(err)
	}
	peerCA, err := testpki.NewCA(name + "-peer-ca")
	if err != nil {
		f.T.Fatal(err)
	}
	sn := desired.ServerCertificateNames(name, f.Namespace, "cluster.local")
	pn := desired.PeerCertificateNames(name, f.Namespace, "cluster.local")
	p := &byoPKI{clientCA: clientCA, peerCA: peerCA, serverName: desired.MemberHost(name+"-e2e", name, f.Namespace)}
	server := must(clientCA.Issue(testpki.Leaf{CommonName: name + "-server", DNSNames: sn.DNSNames, IPAddresses: sn.IPAddresses, Usages: testpki.Both}))
	peer := must(peerCA.Issue(testpki.Leaf{CommonName: name + "-peer", DNSNames: pn.DNSNames, Usages: testpki.Both}))
	operator := must(clientCA.Issue(testpki.Leaf{CommonName: desired.OperatorClientCommonName, Usages: testpki.ClientOnly}))
	p.root = must(clientCA.Issue(testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly}))
	p.user = must(clientCA.Issue(testpki.Leaf{CommonName: "e2e-user", Usages: testpki.ClientOnly}))
	createTLSSecret(f, name+"-server", server, clientCA.CertPEM)
	createTLSSecret(f, name+"-peer", peer, peerCA.CertPEM)
	createTLSSecret(f, name+"-operator-client", operator, clientCA.CertPEM)
	clusterAccess.Store(f.Namespace+"/"+name, p.config(p.root))
	return p
}

// config is a client configuration trusting the client CA and presenting pair.
func (p *byoPKI) config(pair testpki.Pair) *tls.Config {
	t, err := testpki.ClientConfig(p.clientCA.CertPEM, pair, p.serverName)
	if err != nil {
		panic(err) // the pair was issued by the test itself
	}
	return t
}

// spec is the mTLS spec of cluster name over the Secrets newBYOPKI created.
func (p *byoPKI) spec(name string) *etcdv1alpha2.EtcdClusterTLS {
	return &etcdv1alpha2.EtcdClusterTLS{
		Client: &etcdv1alpha2.ClientTLS{
			ServerSecretRef:         &corev1.LocalObjectReference{Name: name + "-server"},
			OperatorClientSecretRef: &corev1.LocalObjectReference{Name: name + "-operator-client"},
		},
		Peer: &etcdv1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: name + "-peer"}},
	}
}

func createTLSSecret(f *framework.Test, name string, pair testpki.Pair, ca []byte) {
	f.T.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM, "ca.crt": ca}}
	if _, err := f.Kube.CoreV1().Secrets(f.Namespace).Create(f.Ctx, s, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating Secret %s: %v", name, err)
	}
}

func createPasswordSecret(f *framework.Test, name, password string) {
	f.T.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{"username": "root", "password": password}}
	if _, err := f.Kube.CoreV1().Secrets(f.Namespace).Create(f.Ctx, s, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating Secret %s: %v", name, err)
	}
}
