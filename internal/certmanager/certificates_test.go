package certmanager

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func cluster(tls *etcdv1alpha2.EtcdClusterTLS) *etcdv1alpha2.EtcdCluster {
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "etcd", UID: types.UID("uid-1")},
		Spec:       etcdv1alpha2.EtcdClusterSpec{TLS: tls},
	}
}

// The objects as a user would read them with kubectl get -o yaml, JSON-typed.
const (
	wantMetadata = `"metadata": {"namespace": "prod", "name": "%s",
		"labels": {"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "etcd",
			"app.kubernetes.io/managed-by": "etcd-operator", "etcd-operator.cozystack.io/cluster": "etcd"},
		"ownerReferences": [{"apiVersion": "etcd-operator.cozystack.io/v1alpha2", "kind": "EtcdCluster", "name": "etcd",
			"uid": "uid-1", "controller": true, "blockOwnerDeletion": true}]}`
	wantSecretTemplate = `"secretTemplate": {"labels": {"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "etcd",
		"app.kubernetes.io/managed-by": "etcd-operator", "etcd-operator.cozystack.io/cluster": "etcd"}}`
	wantKey = `"privateKey": {"algorithm": "RSA", "size": 2048}`
)

var (
	wantServer = `{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", ` + sprintf(wantMetadata, "etcd-server") + `,
	"spec": {"secretName": "etcd-server-tls", ` + wantSecretTemplate + `, ` + wantKey + `,
		"issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "root-ca"},
		"usages": ["digital signature", "key encipherment", "server auth", "client auth"],
		"dnsNames": ["*.etcd.prod.svc", "*.etcd.prod.svc.example.org", "etcd.prod.svc", "etcd.prod.svc.example.org",
			"etcd-client.prod.svc", "etcd-client.prod.svc.example.org", "localhost"],
		"ipAddresses": ["127.0.0.1"]}}`
	wantPeer = `{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", ` + sprintf(wantMetadata, "etcd-peer") + `,
	"spec": {"secretName": "etcd-peer-tls", ` + wantSecretTemplate + `, ` + wantKey + `,
		"issuerRef": {"group": "cert-manager.io", "kind": "Issuer", "name": "peer-ca"},
		"usages": ["digital signature", "key encipherment", "server auth", "client auth"],
		"dnsNames": ["*.etcd.prod.svc", "*.etcd.prod.svc.example.org"]}}`
	wantOperatorClient = `{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", ` + sprintf(wantMetadata, "etcd-operator-client") + `,
	"spec": {"secretName": "etcd-operator-client-tls", ` + wantSecretTemplate + `, ` + wantKey + `,
		"issuerRef": {"group": "cert-manager.io", "kind": "Issuer", "name": "client-ca"},
		"usages": ["digital signature", "key encipherment", "client auth"],
		"commonName": "root"}}`
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func TestCertificates(t *testing.T) {
	t.Parallel()
	server := etcdv1alpha2.IssuerReference{Name: "root-ca", Kind: "ClusterIssuer"}
	peer := etcdv1alpha2.IssuerReference{Name: "peer-ca"} // kind left to the API's default
	client := etcdv1alpha2.IssuerReference{Name: "client-ca", Kind: "Issuer"}
	tests := []struct {
		name string
		tls  *etcdv1alpha2.EtcdClusterTLS
		want []string
	}{
		{name: "no TLS", tls: nil},
		{name: "BYO Secrets only", tls: &etcdv1alpha2.EtcdClusterTLS{
			Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "s"}},
			Peer:   &etcdv1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "p"}}}},
		{name: "server TLS without operator client", want: []string{wantServer}, tls: &etcdv1alpha2.EtcdClusterTLS{
			Client: &etcdv1alpha2.ClientTLS{CertManager: &etcdv1alpha2.ClientCertManagerTLS{ServerIssuerRef: server}}}},
		{name: "peer only, BYO client", want: []string{wantPeer}, tls: &etcdv1alpha2.EtcdClusterTLS{
			Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "s"}},
			Peer:   &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: peer}}}},
		{name: "client mTLS and peer: server, peer, operator client", want: []string{wantServer, wantPeer, wantOperatorClient},
			tls: &etcdv1alpha2.EtcdClusterTLS{
				Client: &etcdv1alpha2.ClientTLS{CertManager: &etcdv1alpha2.ClientCertManagerTLS{ServerIssuerRef: server, OperatorClientIssuerRef: &client}},
				Peer:   &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: peer}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Certificates(cluster(tt.tls), "example.org")
			var want []*unstructured.Unstructured
			for _, w := range tt.want {
				u := &unstructured.Unstructured{}
				if err := json.Unmarshal([]byte(w), &u.Object); err != nil {
					t.Fatalf("test fixture: %v", err)
				}
				want = append(want, u)
			}
			// Through JSON, as the API server receives them: this also proves the content holds
			// only JSON types (an unstructured object holding []string cannot be deep-copied).
			if diff := cmp.Diff(asJSON(t, want), asJSON(t, got)); diff != "" {
				t.Errorf("Certificates (-want +got):\n%s", diff)
			}
			for _, u := range got {
				_ = u.DeepCopy() // panics on content that is not JSON-typed
			}
		})
	}
}

func asJSON(t *testing.T, objs []*unstructured.Unstructured) []map[string]any {
	t.Helper()
	out := []map[string]any{}
	for _, o := range objs {
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// The Secret names are the ones docs/api.md promises and the member template mounts.
func TestSecretNames(t *testing.T) {
	t.Parallel()
	for got, want := range map[string]string{
		SecretName(ServerCertificateName("a")):         "a-server-tls",
		SecretName(PeerCertificateName("a")):           "a-peer-tls",
		SecretName(OperatorClientCertificateName("a")): "a-operator-client-tls",
	} {
		if got != want {
			t.Errorf("Secret %q, want %q", got, want)
		}
	}
}
