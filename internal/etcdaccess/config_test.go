package etcdaccess

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/test/utils/testpki"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// selfSigned is a client certificate and its key, and the CA that signed it, which the tests
// use as the server Secret's ca.crt.
func selfSigned(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	ca, err := testpki.NewCA("x")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
	if err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM, leaf.CertPEM, leaf.KeyPEM
}

func mtlsCluster() *etcdv1alpha2.EtcdCluster {
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns"},
		Spec: etcdv1alpha2.EtcdClusterSpec{
			TLS: &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{
				ServerSecretRef:         &corev1.LocalObjectReference{Name: "server"},
				OperatorClientSecretRef: &corev1.LocalObjectReference{Name: "client"},
			}},
			Auth: &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "root"}},
		},
	}
}

func secret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: data}
}

func reader(objs ...*corev1.Secret) *fake.ClientBuilder {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	b := fake.NewClientBuilder().WithScheme(s)
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	return b
}

func TestConfigBuildsMutualTLSAndCredentials(t *testing.T) {
	t.Parallel()
	ca, crt, key := selfSigned(t)
	c := mtlsCluster()
	c.Status.AuthEnabled = true
	r := reader(secret("server", map[string][]byte{CAKey: ca}), secret("client", map[string][]byte{CertKey: crt, KeyKey: key}),
		secret("root", map[string][]byte{PasswordKey: []byte("s3cret")})).Build()
	cfg, err := Config(context.Background(), r, c, []string{"https://10.0.0.1:2379"}, "etcd-a.etcd.ns.svc")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || cfg.TLS.ServerName != "etcd-a.etcd.ns.svc" || len(cfg.TLS.Certificates) != 1 || cfg.TLS.MinVersion < 0x0303 || cfg.TLSDigest == "" {
		t.Errorf("TLS config = %+v, digest %q", cfg.TLS, cfg.TLSDigest)
	}
	if cfg.Username != RootUser || cfg.Password != "s3cret" {
		t.Errorf("credentials = %q", cfg.Username)
	}
	c.Status.AuthEnabled = false
	if cfg, _ := Config(context.Background(), r, c, nil, "x"); cfg.Password != "" {
		t.Error("credentials are used before status.authEnabled is latched")
	}
}

func TestConfigNamesTheSecretKeyAndFix(t *testing.T) {
	t.Parallel()
	ca, crt, key := selfSigned(t)
	c := mtlsCluster()
	c.Status.AuthEnabled = true
	for name, tc := range map[string]struct {
		secrets []*corev1.Secret
		kind    error
		want    string
	}{
		"no server Secret": {nil, ErrSecretMissing, "Secret server does not exist"},
		"no CA": {[]*corev1.Secret{secret("server", map[string][]byte{CertKey: crt})}, ErrMaterial,
			"Secret server key ca.crt holds no PEM certificate"},
		"client without a key": {[]*corev1.Secret{secret("server", map[string][]byte{CAKey: ca}), secret("client", map[string][]byte{CertKey: crt})},
			ErrMaterial, "Secret client key tls.crt, tls.key do not form"},
		"empty password": {[]*corev1.Secret{secret("server", map[string][]byte{CAKey: ca}), secret("client", map[string][]byte{CertKey: crt, KeyKey: key}),
			secret("root", map[string][]byte{"username": []byte("root")})}, ErrMaterial, "Secret root key password is missing or empty"},
	} {
		_, err := Config(context.Background(), reader(tc.secrets...).Build(), c, nil, "x")
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %v containing %q", name, err, tc.kind, tc.want)
		}
	}
}
