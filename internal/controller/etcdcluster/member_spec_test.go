package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestMemberTLS(t *testing.T) {
	t.Parallel()
	ref := func(n string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: n} }
	cases := []struct {
		name string
		tls  *etcdv1alpha2.EtcdClusterTLS
		ann  map[string]string
		want *etcdv1alpha2.EtcdMemberTLS
	}{
		{"plaintext", nil, nil, nil},
		{"BYO server only", &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref("srv")}}, nil,
			&etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("srv")}},
		{"BYO mTLS and peer", &etcdv1alpha2.EtcdClusterTLS{
			Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref("srv"), OperatorClientSecretRef: ref("op")},
			Peer:   &etcdv1alpha2.PeerTLS{SecretRef: ref("peer")}}, nil,
			&etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("srv"), ClientMTLS: true, PeerSecretRef: ref("peer")}},
		{"cert-manager", &etcdv1alpha2.EtcdClusterTLS{
			Client: &etcdv1alpha2.ClientTLS{CertManager: &etcdv1alpha2.ClientCertManagerTLS{OperatorClientIssuerRef: &etcdv1alpha2.IssuerReference{Name: "ca"}}},
			Peer:   &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{}}}, nil,
			&etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("c-server-tls"), ClientMTLS: true, PeerSecretRef: ref("c-peer-tls")}},
		{"managed", &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}}, nil,
			&etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("c-server-tls"), ClientMTLS: true, PeerSecretRef: ref("c-peer-tls")}},
		{"legacy peer auto TLS", nil, map[string]string{etcdv1alpha2.AnnotationPeerAutoTLS: "true"},
			&etcdv1alpha2.EtcdMemberTLS{PeerAutoTLS: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cl := testCluster()
			cl.Spec.TLS, cl.Annotations = c.tls, c.ann
			got := memberTLS(cl)
			if (got == nil) != (c.want == nil) || (got != nil && (got.ClientMTLS != c.want.ClientMTLS || got.PeerAutoTLS != c.want.PeerAutoTLS ||
				name(got.ClientServerSecretRef) != name(c.want.ClientServerSecretRef) || name(got.PeerSecretRef) != name(c.want.PeerSecretRef))) {
				t.Errorf("memberTLS = %+v, want %+v", got, c.want)
			}
		})
	}
}

func name(r *corev1.LocalObjectReference) string {
	if r == nil {
		return ""
	}
	return r.Name
}
