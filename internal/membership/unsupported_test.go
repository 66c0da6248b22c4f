package membership

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// TestUnsupportedNamesEachField: every field whose feature is not built yet is named, and a
// spec without them (client and peer TLS from Secrets, auth) names none.
func TestUnsupportedNamesEachField(t *testing.T) {
	t.Parallel()
	ref := &corev1.LocalObjectReference{Name: "s"}
	for name, c := range map[string]struct {
		spec etcdv1alpha2.EtcdClusterSpec
		want []string
	}{
		"nothing":          {},
		"peer TLS, Secret": {spec: etcdv1alpha2.EtcdClusterSpec{TLS: &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{SecretRef: ref}}}},
		"auth disabled":    {spec: etcdv1alpha2.EtcdClusterSpec{Auth: &etcdv1alpha2.AuthSpec{}}},
		"client TLS":       {spec: etcdv1alpha2.EtcdClusterSpec{TLS: &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref}}}},
		"peer cert-manager": {spec: etcdv1alpha2.EtcdClusterSpec{TLS: &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{
			CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: etcdv1alpha2.IssuerReference{Name: "ca"}}}}},
			want: []string{"spec.tls.peer.certManager "}},
		"auth and client TLS": {spec: etcdv1alpha2.EtcdClusterSpec{
			TLS:  &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref}},
			Auth: &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: ref}}},
		"restore": {spec: etcdv1alpha2.EtcdClusterSpec{Bootstrap: &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{}}},
			want: []string{"spec.bootstrap.restore "}},
	} {
		got := Unsupported(&c.spec)
		if len(got) != len(c.want) {
			t.Errorf("%s: Unsupported = %q, want fields %q", name, got, c.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s: Unsupported[%d] = %q, want it to name %q", name, i, got[i], c.want[i])
			}
		}
	}
}

// TestUnsupportedStartsNoEtcd: a new cluster asking for a feature not built yet gets no seed, and
// its conditions name the field; a running one keeps being looked after (a scale-down removes),
// but nothing new starts (a scale-up adds no member).
func TestUnsupportedStartsNoEtcd(t *testing.T) {
	t.Parallel()
	fields := []string{"spec.bootstrap.restore (restore from a snapshot)"}
	fresh := Scope{Target: 3, Unsupported: fields}
	a := Next(fresh)
	if a.Kind != KindNone || a.Reason != ReasonFeatureNotSupported || !strings.Contains(a.Message, "spec.bootstrap.restore") {
		t.Fatalf("new cluster: Next = %+v, want no step, FeatureNotSupported naming the field", a)
	}
	conds := Conditions(ConditionInput{Scope: &fresh, Action: a, Generation: 1})
	for _, want := range []struct {
		t  string
		st metav1.ConditionStatus
	}{{etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse}, {etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse},
		{etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue}} {
		c := meta.FindStatusCondition(conds, want.t)
		if c == nil || c.Status != want.st || c.Reason != ReasonFeatureNotSupported || !strings.Contains(c.Message, "spec.bootstrap.restore") {
			t.Errorf("%s = %+v, want %s/FeatureNotSupported naming the field", want.t, c, want.st)
		}
	}

	grow := steady3()
	grow.Target, grow.Unsupported = 5, fields
	if got := Next(grow); got.Kind != KindNone || got.Reason != ReasonFeatureNotSupported {
		t.Errorf("scale-up: Next = %+v, want no new member", got)
	}
	shrink := steady3()
	shrink.Target, shrink.Unsupported = 1, fields
	if got := Next(shrink); got.Kind == KindNone || got.Reason == ReasonFeatureNotSupported {
		t.Errorf("scale-down: Next = %+v, want the removal to go ahead", got)
	}
}
