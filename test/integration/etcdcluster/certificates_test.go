package etcdcluster_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// Names in the certificates of cluster c in namespace ns (docs/tls.md, "Names in the
// certificates").
func memberWildcard(c, ns string) string { return "*." + c + "." + ns + ".svc" }
func clientService(c, ns string) string  { return c + "-client." + ns + ".svc" }

// longValidity keeps a test's certificates clear of the expiry checks (30 days).
const longValidity = 365 * 24 * time.Hour

// serverLeaf is a correct server certificate request for cluster c.
func serverLeaf(c, ns string) testpki.Leaf {
	return testpki.Leaf{CommonName: c, DNSNames: []string{memberWildcard(c, ns), clientService(c, ns), "localhost"}, Usages: testpki.Both,
		NotAfter: time.Now().Add(longValidity)}
}

// peerLeaf is a correct peer certificate request for cluster c.
func peerLeaf(c, ns string) testpki.Leaf {
	return testpki.Leaf{CommonName: c, DNSNames: []string{memberWildcard(c, ns)}, Usages: testpki.Both, NotAfter: time.Now().Add(longValidity)}
}

// tlsData is a TLS Secret's data: a certificate of ca for leaf, and ca.crt unless withoutCA.
func tlsData(t *testing.T, ca *testpki.CA, leaf testpki.Leaf, withoutCA bool) map[string][]byte {
	t.Helper()
	p, err := ca.Issue(leaf)
	if err != nil {
		t.Fatal(err)
	}
	d := map[string][]byte{corev1.TLSCertKey: p.CertPEM, corev1.TLSPrivateKeyKey: p.KeyPEM}
	if !withoutCA {
		d["ca.crt"] = ca.CertPEM
	}
	return d
}

// putSecret creates the kubernetes.io/tls Secret name, or replaces its data.
func (w *world) putSecret(name string, data map[string][]byte) {
	w.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}, Type: corev1.SecretTypeTLS, Data: data}
	if err := k8s.Get(w.t.Context(), client.ObjectKeyFromObject(s), s); err == nil {
		s.Data = data
		if err := k8s.Update(w.t.Context(), s); err != nil {
			w.t.Fatal(err)
		}
		return
	}
	if err := k8s.Create(w.t.Context(), s); err != nil {
		w.t.Fatal(err)
	}
}

// seedCreated waits for the seed's EtcdMember of cluster name.
func (w *world) seedCreated(name string, within time.Duration) {
	w.t.Helper()
	wait.Eventually(w.t, within, name+": the seed is created", func() error {
		ms, err := w.members(w.t.Context(), name)
		if err != nil || len(ms) != 1 {
			return fmt.Errorf("%d members: %w", len(ms), errors.Join(err, errNotYet))
		}
		return nil
	})
}

// TestBYOCertificatesChecked: each way a certificate the user brings can be wrong gives
// Degraded=True/CertificateInvalid naming the Secret, the key and the fix, and no member; once
// the Secret is fixed the fixed requeue picks it up and the seed is created (docs/tls.md,
// "Validation of your own certificates").
func TestBYOCertificatesChecked(t *testing.T) {
	t.Parallel()
	peerOnly := func(secret string) *etcdv1alpha2.EtcdClusterTLS {
		return &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: secret}}}
	}
	cases := []struct {
		name string
		// tls is the cluster's spec.tls; bad and good the data of its one Secret, named "tls".
		tls       *etcdv1alpha2.EtcdClusterTLS
		bad, good func(t *testing.T, ca *testpki.CA, c, ns string) map[string][]byte
		says      []string
	}{
		{name: "peer Secret without ca.crt", tls: peerOnly("tls"),
			bad: func(t *testing.T, ca *testpki.CA, c, ns string) map[string][]byte {
				t.Helper()
				return tlsData(t, ca, peerLeaf(c, ns), true)
			},
			good: func(t *testing.T, ca *testpki.CA, c, ns string) map[string][]byte {
				t.Helper()
				return tlsData(t, ca, peerLeaf(c, ns), false)
			},
			says: []string{"Secret tls, key ca.crt: missing; add the PEM bundle of the CA certificates"}},
		{name: "server certificate without the wildcard",
			tls: &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "tls"}}},
			bad: func(t *testing.T, ca *testpki.CA, c, ns string) map[string][]byte {
				t.Helper()
				l := serverLeaf(c, ns)
				l.DNSNames = []string{c + "-aaaaa." + c + "." + ns + ".svc", clientService(c, ns), "localhost"}
				return tlsData(t, ca, l, false)
			},
			good: func(t *testing.T, ca *testpki.CA, c, ns string) map[string][]byte {
				t.Helper()
				return tlsData(t, ca, serverLeaf(c, ns), false)
			},
			says: []string{"Secret tls, key tls.crt: the server certificate does not cover a new member's name", "add the subject alternative name *.srv."}},
		{name: "expired peer certificate", tls: peerOnly("tls"),
			bad: func(t *testing.T, ca *testpki.CA, c, ns string) map[string][]byte {
				t.Helper()
				l := peerLeaf(c, ns)
				l.NotBefore, l.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
				return tlsData(t, ca, l, false)
			},
			good: func(t *testing.T, ca *testpki.CA, c, ns string) map[string][]byte {
				t.Helper()
				return tlsData(t, ca, peerLeaf(c, ns), false)
			},
			says: []string{"Secret tls, key tls.crt: the peer certificate expired at", "put a renewed certificate"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.startController()
			ca, err := testpki.NewCA("user CA")
			if err != nil {
				t.Fatal(err)
			}
			const name = "srv"
			w.putSecret("tls", c.bad(t, ca, name, w.ns))
			w.newTLSCluster(name, c.tls)
			wait.Eventually(t, convergeTimeout, "Degraded=True/CertificateInvalid",
				w.condition(name, etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, membership.ReasonCertificateInvalid, c.says...))
			w.noMembers(name)
			if n := w.eventCount(name, membership.ReasonCertificateInvalid); n != 1 {
				t.Errorf("%d CertificateInvalid Events, want 1", n)
			}

			w.putSecret("tls", c.good(t, ca, name, w.ns))
			w.seedCreated(name, tlsSecretWait)
			wait.Eventually(t, convergeTimeout, "no longer CertificateInvalid", func() error {
				if d := meta.FindStatusCondition(w.cluster(name).Status.Conditions, etcdv1alpha2.ConditionDegraded); d == nil || d.Reason == membership.ReasonCertificateInvalid {
					return fmt.Errorf("Degraded = %+v", d)
				}
				return nil
			})
		})
	}
}

// TestBYOCertificateExpiringSoon: a peer certificate that expires within a week degrades the
// cluster but holds nothing back (the seed is created), and is announced by one Warning Event
// however many passes see it.
func TestBYOCertificateExpiringSoon(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	ca, err := testpki.NewCA("user CA")
	if err != nil {
		t.Fatal(err)
	}
	l := peerLeaf("soon", w.ns)
	l.NotAfter = time.Now().Add(5 * 24 * time.Hour)
	w.putSecret("soon-peer", tlsData(t, ca, l, false))
	w.newTLSCluster("soon", &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "soon-peer"}}})
	w.seedCreated("soon", convergeTimeout)
	wait.Eventually(t, convergeTimeout, "Degraded=True/CertificateInvalid",
		w.condition("soon", etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, membership.ReasonCertificateInvalid,
			"Secret soon-peer, key tls.crt: the peer certificate expires at", "in less than 7 days; renew it now"))
	// Across the fixed requeue and the passes the seed's progress causes, one Warning.
	wait.Eventually(t, convergeTimeout, "a CertificateExpiringSoon Event", func() error {
		if n := w.eventCount("soon", "CertificateExpiringSoon"); n != 1 {
			return fmt.Errorf("%d Events: %w", n, errNotYet)
		}
		return nil
	})
	wait.Consistently(t, tlsSecretWait, "one CertificateExpiringSoon Event", func() error {
		if n := w.eventCount("soon", "CertificateExpiringSoon"); n != 1 {
			return fmt.Errorf("%d CertificateExpiringSoon Events, want 1", n)
		}
		return nil
	})
}
