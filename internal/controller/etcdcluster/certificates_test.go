package etcdcluster

import (
	"crypto/x509"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/pki"
)

// TestBYOExpectations: the user's own Secrets are checked for a new member's name under the
// cluster's headless Service, the server one also for the client Service; the operator's
// client certificate is verified with the server Secret's ca.crt; issued Secrets are not checked.
func TestBYOExpectations(t *testing.T) {
	t.Parallel()
	ref := func(n string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: n} }
	c := testCluster()
	c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{
		Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref("srv"), OperatorClientSecretRef: ref("op")},
		Peer:   &etcdv1alpha2.PeerTLS{SecretRef: ref("peer")},
	}
	got := byoExpectations(c)
	if len(got) != 3 {
		t.Fatalf("%d expectations: %+v", len(got), got)
	}
	srv, op, peer := got[0], got[1], got[2]
	member := pki.HostCheck{Host: "c-xxxxx.c.ns.svc", What: "a new member's name", SAN: "*.c.ns.svc"}
	if srv.Secret != "srv" || !srv.NeedCA || srv.TrustedBy != "srv" || !slices.Equal(srv.Hosts, []pki.HostCheck{member,
		{Host: "c-client.ns.svc", What: "the client Service", SAN: "c-client.ns.svc"}}) || !slices.Equal(srv.Usages, memberUsages) {
		t.Errorf("server expectation %+v", srv)
	}
	if op.Secret != "op" || op.NeedCA || op.TrustedBy != "srv" || len(op.Hosts) != 0 || !slices.Equal(op.Usages, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("operator client expectation %+v", op)
	}
	if peer.Secret != "peer" || !peer.NeedCA || peer.TrustedBy != "peer" || !slices.Equal(peer.Hosts, []pki.HostCheck{member}) {
		t.Errorf("peer expectation %+v", peer)
	}
	issuer := etcdv1alpha2.IssuerReference{Name: "ca"}
	for name, tls := range map[string]*etcdv1alpha2.EtcdClusterTLS{
		"cert-manager": {Client: &etcdv1alpha2.ClientTLS{CertManager: &etcdv1alpha2.ClientCertManagerTLS{ServerIssuerRef: issuer}},
			Peer: &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: issuer}}},
		"managed": {Managed: &etcdv1alpha2.ManagedTLS{}},
		"none":    nil,
	} {
		c.Spec.TLS = tls
		if got := byoExpectations(c); len(got) != 0 {
			t.Errorf("%s: %+v", name, got)
		}
	}
}

// TestManagedSecrets: two CAs, three leaves under cert-manager mode's names, the server and
// peer SANs of docs/tls.md with the configured domain, the operator's common name.
func TestManagedSecrets(t *testing.T) {
	t.Parallel()
	cas, leaves := managedSecrets(testCluster(), "example.org")
	if len(cas) != 2 || cas[0].Secret != "c-ca" || cas[1].Secret != "c-peer-ca" {
		t.Fatalf("CAs %+v", cas)
	}
	want := []struct{ secret, ca, cn string }{
		{"c-server-tls", "c-ca", "c-server"}, {"c-peer-tls", "c-peer-ca", "c-peer"}, {"c-operator-client-tls", "c-ca", "root"},
	}
	if len(leaves) != len(want) {
		t.Fatalf("leaves %+v", leaves)
	}
	for i, w := range want {
		if l := leaves[i]; l.Secret != w.secret || l.CA != w.ca || l.Want.CommonName != w.cn {
			t.Errorf("leaf %d = %s signed by %s for %s, want %+v", i, l.Secret, l.CA, l.Want.CommonName, w)
		}
	}
	if !slices.Contains(leaves[0].Want.DNSNames, "*.c.ns.svc.example.org") || !slices.Contains(leaves[0].Want.DNSNames, "c-client.ns.svc") {
		t.Errorf("server SANs %v", leaves[0].Want.DNSNames)
	}
	if !slices.Equal(leaves[1].Want.DNSNames, []string{"*.c.ns.svc", "*.c.ns.svc.example.org"}) || !slices.Equal(leaves[1].Want.Usages, memberUsages) {
		t.Errorf("peer names %v usages %v", leaves[1].Want.DNSNames, leaves[1].Want.Usages)
	}
	if len(leaves[2].Want.DNSNames) != 0 || !slices.Equal(leaves[2].Want.Usages, clientUsages) {
		t.Errorf("operator client %+v", leaves[2].Want)
	}
}

func TestCertificateProblems(t *testing.T) {
	t.Parallel()
	got := certificateProblems([]pki.Problem{
		{Message: "invalid", Severity: pki.SeverityInvalid},
		{Message: "within a month", Severity: pki.SeverityWarning, Certificate: "f1"},
		{Message: "within a week", Severity: pki.SeverityDegraded, Certificate: "f2"},
	})
	want := []membership.CertificateProblem{{Message: "invalid", Holds: true}, {Message: "within a week"}}
	if !slices.Equal(got, want) {
		t.Errorf("certificateProblems = %+v, want %+v", got, want)
	}
}

// TestRenewalRequeue: the pass after this one runs no later than the next renewal.
func TestRenewalRequeue(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	at := func(d time.Duration) *pki.Plan { return &pki.Plan{NextRenewal: now.Add(d)} }
	cases := []struct {
		name string
		d    time.Duration
		plan *pki.Plan
		want time.Duration
	}{
		{"no managed TLS", 30 * time.Second, nil, 30 * time.Second},
		{"no leaf yet", 30 * time.Second, &pki.Plan{}, 30 * time.Second},
		{"renewal after the resync", 30 * time.Second, at(60 * 24 * time.Hour), 30 * time.Second},
		{"renewal before a long back-off", time.Hour, at(10 * time.Minute), 10 * time.Minute},
		{"renewal due already", 30 * time.Second, at(-time.Minute), nextStepDelay},
	}
	for _, c := range cases {
		if got := renewalRequeue(c.d, c.plan, now); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestTLSCache: parsed content is served for the version it was read at only, and an expiring
// certificate is announced once a day per cluster.
func TestTLSCache(t *testing.T) {
	t.Parallel()
	c := newTLSCache()
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	m := &cachedSecret{resourceVersion: "7", material: &pki.Material{}, caDigest: "sha256:x"}
	c.store(a, "srv", m)
	if c.secret(a, "srv", "7") != m || c.secret(a, "srv", "8") != nil || c.secret(b, "srv", "7") != nil {
		t.Error("material served for another version or cluster")
	}
	now := time.Unix(0, 0)
	for _, s := range []struct {
		cluster types.NamespacedName
		at      time.Duration
		want    bool
	}{{a, 0, true}, {a, time.Hour, false}, {b, time.Hour, true}, {a, 24 * time.Hour, true}, {a, 25 * time.Hour, false}} {
		if got := c.announce(s.cluster, "srv/f1", now.Add(s.at)); got != s.want {
			t.Errorf("announce %s at %s = %v, want %v", s.cluster.Name, s.at, got, s.want)
		}
	}
	c.forget(a)
	if c.secret(a, "srv", "7") != nil || !c.announce(a, "srv/f1", now.Add(26*time.Hour)) {
		t.Error("a forgotten cluster's entries survived")
	}
}
