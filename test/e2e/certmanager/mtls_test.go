//go:build e2e

package certmanager

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
)

// TestMutualTLSFromCertManager runs the docs/api.md example's shape with every certificate from
// cert-manager: client mTLS (server and operator client Certificates from one CA Issuer), peer
// mTLS (from another) and root auth. The operator creates the three Certificates, cert-manager
// issues them, the cluster converges with auth latched, and the operator's client certificate
// (common name root) writes and reads a key over mTLS; a client without a certificate is
// refused.
func TestMutualTLSFromCertManager(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Security)
	requireOperator(t, f)
	if err := f.InstallCertManager(f.Ctx); err != nil {
		t.Fatal(err)
	}
	caIssuers(t, f, "client-ca", "peer-ca")
	const name = "etcd"
	root := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: name + "-root"}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{"username": "root", "password": rand.Text()}}
	if _, err := f.Kube.CoreV1().Secrets(f.Namespace).Create(f.Ctx, root, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := f.NewClient(etcdv1alpha2.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	clientCA := etcdv1alpha2.IssuerReference{Name: "client-ca"}
	ec := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: etcdVersion,
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
			TLS: &etcdv1alpha2.EtcdClusterTLS{
				Client: &etcdv1alpha2.ClientTLS{CertManager: &etcdv1alpha2.ClientCertManagerTLS{ServerIssuerRef: clientCA, OperatorClientIssuerRef: &clientCA}},
				Peer:   &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: etcdv1alpha2.IssuerReference{Name: "peer-ca"}}},
			},
			Auth: &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: root.Name}}},
	}
	start := time.Now()
	if err := c.Create(f.Ctx, ec); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, f, c, name, 3)
	f.Record("bootstrap-3-mtls-cert-manager", time.Since(start), "3 members, client and peer mTLS from cert-manager Certificates the operator created, to Available")
	err = f.Poll("status.authEnabled", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), ec); err != nil {
			return false, err.Error(), nil
		}
		return ec.Status.AuthEnabled, fmt.Sprintf("authEnabled %v", ec.Status.AuthEnabled), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Record("bootstrap-3-mtls-auth-cert-manager", time.Since(start), "to status.authEnabled")
	for _, cert := range []string{name + "-server", name + "-peer", name + "-operator-client"} {
		requireCertificateReady(t, f, cert)
	}
	asRoot, anonymous := clientConfigs(t, f, name)
	if err := putGet(f, name, asRoot); err != nil {
		t.Errorf("the operator client certificate (common name root) over mTLS: %v", err)
	}
	if err := putGet(f, name, anonymous); err == nil {
		t.Error("a client without a certificate was served; want it refused (--client-cert-auth)")
	}
}

// requireCertificateReady fails unless Certificate name of the test namespace is Ready=True.
func requireCertificateReady(t *testing.T, f *framework.Test, name string) {
	t.Helper()
	u, err := f.Dynamic.Resource(certificates).Namespace(f.Namespace).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Certificate %s: %v", name, err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			return
		}
	}
	t.Errorf("Certificate %s is not Ready: %v", name, conds)
}

// clientConfigs are the TLS configurations of the operator's client certificate, and of a client
// that trusts the server but presents no certificate, both verifying a member's DNS name.
func clientConfigs(t *testing.T, f *framework.Test, name string) (asRoot, anonymous clientTLS) {
	t.Helper()
	server, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Ctx, name+"-server-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	operator, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Ctx, name+"-operator-client-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return clientTLS{ca: server.Data["ca.crt"], cert: operator.Data["tls.crt"], key: operator.Data["tls.key"]},
		clientTLS{ca: server.Data["ca.crt"]}
}

// clientTLS is the PEM material a client dials members with.
type clientTLS struct{ ca, cert, key []byte }

// putGet writes and reads a key on a voter of cluster name, dialled by Pod IP over TLS with t.
func putGet(f *framework.Test, name string, t clientTLS) error {
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: etcdv1alpha2.LabelCluster + "=" + name})
	if err != nil || len(pods.Items) == 0 {
		return fmt.Errorf("listing member Pods: %w (%d)", err, len(pods.Items))
	}
	pod := pods.Items[0]
	// Members are verified against a member's DNS name, which the server wildcard covers,
	// whatever address gRPC dials (tlsverify.As).
	cfg, err := testpki.ClientConfig(t.ca, testpki.Pair{CertPEM: t.cert, KeyPEM: t.key}, pod.Name+"."+name+"."+f.Namespace+".svc")
	if err != nil {
		return err
	}
	ep, err := etcdconn.PodEndpoint(&pod, etcdconn.ClientPort, true)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(f.Ctx, 3*etcdCallTimeout)
	defer cancel()
	cli, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: []string{ep}, DialTimeout: etcdCallTimeout, TLS: cfg})
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()
	if _, err := cli.Put(ctx, "e2e-cert-manager", "ok"); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	resp, err := cli.Get(ctx, "e2e-cert-manager", clientv3.WithSerializable())
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "ok" {
		return fmt.Errorf("get: read back %v", resp.Kvs)
	}
	return nil
}
