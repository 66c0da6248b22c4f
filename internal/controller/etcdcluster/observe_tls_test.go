package etcdcluster

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// fakeDiscovery answers ServerResourcesForGroupVersion from its fields and counts the calls.
type fakeDiscovery struct {
	resources []string
	err       error
	calls     int
}

func (f *fakeDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	l := &metav1.APIResourceList{GroupVersion: gv}
	for _, r := range f.resources {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r})
	}
	return l, nil
}

var notServed = apierrors.NewNotFound(schema.GroupResource{Group: "cert-manager.io"}, "v1")

// TestCertManagerProbeCachesForTheReprobeInterval: discovery is asked at most once per interval,
// and an installation is seen once the interval has passed, without a restart.
func TestCertManagerProbeCachesForTheReprobeInterval(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	d := &fakeDiscovery{err: notServed}
	p := NewCertManagerProbe(d, clk, time.Minute)
	step := func(what string, wantInstalled bool, wantCalls int) {
		t.Helper()
		got, err := p.CertManagerInstalled()
		if err != nil || got != wantInstalled || d.calls != wantCalls {
			t.Errorf("%s: installed = %v, %v after %d discovery calls; want %v after %d", what, got, err, d.calls, wantInstalled, wantCalls)
		}
	}
	step("not served", false, 1)
	clk.SetTime(clk.Now().Add(59 * time.Second))
	d.err, d.resources = nil, []string{"certificates", "certificates/status"}
	step("installed, but the answer is fresh", false, 1)
	clk.SetTime(clk.Now().Add(time.Second))
	step("re-probed after the interval", true, 2)
	clk.SetTime(clk.Now().Add(time.Minute))
	d.err = errors.New("connection refused")
	step("discovery failing keeps the last answer", true, 3)
	clk.SetTime(clk.Now().Add(time.Minute))
	d.err, d.resources = nil, []string{"issuers"}
	step("the group served without certificates is not enough", false, 4)
}

func TestCertManagerProbeWithoutAnAnswerFails(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection refused")
	p := NewCertManagerProbe(&fakeDiscovery{err: boom}, clocktesting.NewFakePassiveClock(time.Unix(0, 0)), time.Minute)
	if _, err := p.CertManagerInstalled(); !errors.Is(err, boom) {
		t.Errorf("first probe failing = %v, want the discovery error", err)
	}
}

func TestTLSSecretNames(t *testing.T) {
	t.Parallel()
	ref := func(n string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: n} }
	issuer := etcdv1alpha2.IssuerReference{Name: "ca"}
	cases := []struct {
		name        string
		tls         *etcdv1alpha2.EtcdClusterTLS
		want        []string
		certManager bool
	}{
		{"no TLS", nil, nil, false},
		{"BYO server only", &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref("srv")}}, []string{"srv"}, false},
		{"BYO mTLS and peer", &etcdv1alpha2.EtcdClusterTLS{
			Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref("srv"), OperatorClientSecretRef: ref("op")},
			Peer:   &etcdv1alpha2.PeerTLS{SecretRef: ref("peer")},
		}, []string{"op", "peer", "srv"}, false},
		{"cert-manager everything", &etcdv1alpha2.EtcdClusterTLS{
			Client: &etcdv1alpha2.ClientTLS{CertManager: &etcdv1alpha2.ClientCertManagerTLS{ServerIssuerRef: issuer, OperatorClientIssuerRef: &issuer}},
			Peer:   &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: issuer}},
		}, []string{"c-operator-client-tls", "c-peer-tls", "c-server-tls"}, true},
		{"cert-manager peer, BYO client", &etcdv1alpha2.EtcdClusterTLS{
			Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref("srv")},
			Peer:   &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: issuer}},
		}, []string{"c-peer-tls", "srv"}, true},
		{"managed", &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}},
			[]string{"c-operator-client-tls", "c-peer-tls", "c-server-tls"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: etcdv1alpha2.EtcdClusterSpec{TLS: tc.tls}}
			if got := tlsSecretNames(c); !slices.Equal(got, tc.want) {
				t.Errorf("tlsSecretNames = %v, want %v", got, tc.want)
			}
			if got := certManagerRequested(tc.tls); got != tc.certManager {
				t.Errorf("certManagerRequested = %v, want %v", got, tc.certManager)
			}
		})
	}
}
