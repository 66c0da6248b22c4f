package etcdmember_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// issued signs cn's certificate with a CA of its own, so that the server and peer Secrets
// carry different ca.crt digests into the template hash.
func issued(t *testing.T, cn string) (caPEM []byte, leaf testpki.Pair) {
	t.Helper()
	ca, err := testpki.NewCA(cn + " CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err = ca.Issue(testpki.Leaf{CommonName: cn, Usages: testpki.Both})
	if err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM, leaf
}

func createSecret(t *testing.T, ns, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	if err := k8sClient.Create(t.Context(), s); err != nil {
		t.Fatalf("creating Secret %s: %v", name, err)
	}
}

// A TLS member waits for its Secrets, carries their CA digests in its template hash, and its
// finalizer check dials etcd over TLS with the operator's client certificate and root's
// credentials.
func TestTLSMember(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"},
		Spec: etcdv1alpha2.EtcdClusterSpec{
			Version: "3.6.5",
			TLS: &etcdv1alpha2.EtcdClusterTLS{
				Client: &etcdv1alpha2.ClientTLS{
					ServerSecretRef:         &corev1.LocalObjectReference{Name: "server-tls"},
					OperatorClientSecretRef: &corev1.LocalObjectReference{Name: "operator-tls"},
				},
				Peer: &etcdv1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "peer-tls"}},
			},
			Auth: &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "root"}},
		},
	}
	if err := k8sClient.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	c.Status.ClusterID, c.Status.AuthEnabled = "c1d", true
	if err := k8sClient.Status().Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	m := newMember(t, c, func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.TLS = &etcdv1alpha2.EtcdMemberTLS{
			ClientServerSecretRef: &corev1.LocalObjectReference{Name: "server-tls"}, ClientMTLS: true,
			PeerSecretRef: &corev1.LocalObjectReference{Name: "peer-tls"},
		}
	})

	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPodNotReady,
		"TLS Secret server-tls does not exist")

	serverCA, server := issued(t, "server")
	peerCA, peer := issued(t, "peer")
	_, operator := issued(t, "operator")
	createSecret(t, ns, "server-tls", map[string][]byte{"ca.crt": serverCA, "tls.crt": server.CertPEM, "tls.key": server.KeyPEM})
	createSecret(t, ns, "peer-tls", map[string][]byte{"ca.crt": peerCA, "tls.crt": peer.CertPEM, "tls.key": peer.KeyPEM})
	createSecret(t, ns, "operator-tls", map[string][]byte{"tls.crt": operator.CertPEM, "tls.key": operator.KeyPEM})
	createSecret(t, ns, "root", map[string][]byte{"password": []byte("s3cret")})

	pod := waitPod(t, m) // within secretWait of the Secrets appearing
	m, _ = getMember(t.Context(), m)
	wantHash := desired.TemplateHash(&m.Spec, desired.MemberImages(imageRepository, "3.6.5", guardImage),
		desired.CADigests{Client: desired.CADigest(serverCA), Peer: desired.CADigest(peerCA)})
	if got := pod.Annotations[etcdv1alpha2.AnnotationTemplateHash]; got != wantHash {
		t.Errorf("template-hash = %q, want %q (with the CA digests)", got, wantHash)
	}

	markPodRunning(t, pod, "10.0.4.1", true)
	setMemberStatus(t, m, "a1", true)
	etcd.setMembers(ns, c.Name, etcdclient.Member{ID: 0xa1, Name: m.Name})
	waitCondition(t, m, etcdv1alpha2.ConditionUpdated, metav1.ConditionTrue, etcdmember.ReasonTemplateCurrent)
	if err := k8sClient.Delete(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionTrue, etcdmember.ReasonPodReady, etcdmember.MsgDeletionBlocked)
	wait.Eventually(t, convergeTimeout, "etcd dialled over TLS as root", func(context.Context) error {
		cfg, ok := etcd.configOf(ns, c.Name)
		switch {
		case !ok:
			return fmt.Errorf("not dialled")
		case len(cfg.Endpoints) != 1 || cfg.Endpoints[0] != "https://10.0.4.1:2379":
			return fmt.Errorf("endpoints %v", cfg.Endpoints)
		case cfg.TLS == nil || cfg.TLSDigest == "" || len(cfg.TLS.Certificates) != 1 || cfg.TLS.RootCAs == nil:
			return fmt.Errorf("TLS config %+v, digest %q", cfg.TLS, cfg.TLSDigest)
		case cfg.TLS.ServerName != m.Name+".etcd."+ns+".svc":
			return fmt.Errorf("server name %q", cfg.TLS.ServerName)
		case cfg.Username != "root" || cfg.Password != "s3cret":
			return fmt.Errorf("credentials for user %q", cfg.Username)
		}
		return nil
	})
}
