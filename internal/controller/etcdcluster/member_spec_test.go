package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
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

// TestNewMemberCarriesRestoreOnTheSeedOnly: spec.bootstrap.restore reaches the seed's spec, a
// copy the cluster's spec does not share, and no other member's.
func TestNewMemberCarriesRestoreOnTheSeedOnly(t *testing.T) {
	t.Parallel()
	cl := testCluster()
	cl.Status.Observed = membership.ObservedFromSpec(&cl.Spec)
	cl.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{
		Source:   etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "etcd/nightly.db"}},
		Checksum: "sha256:" + strings.Repeat("0", 64),
	}}
	hash := func(*etcdv1alpha2.EtcdMemberSpec) string { return "h" }
	seed := newMember(cl, true, hash)
	if !equality.Semantic.DeepEqual(seed.Spec.Restore, cl.Spec.Bootstrap.Restore) || seed.Spec.Restore == cl.Spec.Bootstrap.Restore {
		t.Errorf("seed restore %+v, want a copy of %+v", seed.Spec.Restore, cl.Spec.Bootstrap.Restore)
	}
	if m := newMember(cl, false, hash); m.Spec.Restore != nil {
		t.Errorf("a joiner carries restore %+v", m.Spec.Restore)
	}
}
