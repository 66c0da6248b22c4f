package etcdaccess

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// TestManagedSecretNames: spec.tls.managed is client mutual TLS through the operator's own
// Secrets, named as cert-manager mode names them.
func TestManagedSecretNames(t *testing.T) {
	t.Parallel()
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns"},
		Spec: etcdv1alpha2.EtcdClusterSpec{TLS: &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}}}}
	if !ClientTLS(c) || ServerSecretName(c) != "etcd-server-tls" || OperatorClientSecretName(c) != "etcd-operator-client-tls" {
		t.Errorf("managed: client TLS %v, server %q, operator client %q", ClientTLS(c), ServerSecretName(c), OperatorClientSecretName(c))
	}
}
