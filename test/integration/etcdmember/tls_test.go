package etcdmember_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// testPKI is a CA and one certificate it signed, PEM-encoded.
type testPKI struct {
	caPEM, certPEM, keyPEM []byte
}

// newTestPKI generates a throwaway CA and a leaf certificate for cn.
func newTestPKI(t *testing.T, cn string) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testPKI{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
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

	server, peer, operator := newTestPKI(t, "server"), newTestPKI(t, "peer"), newTestPKI(t, "operator")
	createSecret(t, ns, "server-tls", map[string][]byte{"ca.crt": server.caPEM, "tls.crt": server.certPEM, "tls.key": server.keyPEM})
	createSecret(t, ns, "peer-tls", map[string][]byte{"ca.crt": peer.caPEM, "tls.crt": peer.certPEM, "tls.key": peer.keyPEM})
	createSecret(t, ns, "operator-tls", map[string][]byte{"tls.crt": operator.certPEM, "tls.key": operator.keyPEM})
	createSecret(t, ns, "root", map[string][]byte{"password": []byte("s3cret")})

	pod := waitPod(t, m) // within secretWait of the Secrets appearing
	m, _ = getMember(t.Context(), m)
	wantHash := desired.TemplateHash(&m.Spec, desired.MemberImages(imageRepository, "3.6.5", guardImage),
		desired.CADigests{Client: desired.CADigest(server.caPEM), Peer: desired.CADigest(peer.caPEM)})
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
