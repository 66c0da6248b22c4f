package etcdcluster_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// tlsSecretWait bounds the wait for the fixed TLS Secret requeue (membership.TLSSecretWait) and
// the pass it causes.
const tlsSecretWait = membership.TLSSecretWait + 5*time.Second

// newTLSCluster creates a 1-member cluster with the given TLS.
func (w *world) newTLSCluster(name string, tls *etcdv1alpha2.EtcdClusterTLS) {
	w.t.Helper()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: "3.6.5", TLS: tls,
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}},
	}
	if err := w.createCluster(c); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) createCluster(c *etcdv1alpha2.EtcdCluster) error {
	if err := k8s.Create(w.t.Context(), c); err != nil {
		return fmt.Errorf("creating EtcdCluster %s: %w", c.Name, err)
	}
	return nil
}

// condition checks one condition of cluster name.
func (w *world) condition(name, typ string, status metav1.ConditionStatus, reason string, msgParts ...string) func() error {
	return func() error {
		c := meta.FindStatusCondition(w.cluster(name).Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("%s = %+v, want %s/%s", typ, c, status, reason)
		}
		for _, p := range msgParts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("%s message %q does not contain %q", typ, c.Message, p)
			}
		}
		return nil
	}
}

// noMembers fails if cluster name has any EtcdMember, read uncached.
func (w *world) noMembers(name string) {
	w.t.Helper()
	ms, err := w.members(w.t.Context(), name)
	if err != nil {
		w.t.Fatal(err)
	}
	if len(ms) != 0 {
		w.t.Fatalf("%d EtcdMembers were created although the TLS material is missing", len(ms))
	}
}

// TestTLSSecretMissing names a peer TLS Secret that does not exist: Degraded=True/TLSSecretMissing
// naming it, no member; once the Secret is created the fixed requeue picks it up and the seed is
// created.
func TestTLSSecretMissing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newTLSCluster("byo", &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "byo-server"}}})
	wait.Eventually(t, convergeTimeout, "Degraded=True/TLSSecretMissing",
		w.condition("byo", etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, membership.ReasonTLSSecretMissing, "TLS Secret byo-server does not exist"))
	if c := meta.FindStatusCondition(w.cluster("byo").Status.Conditions, etcdv1alpha2.ConditionAvailable); c == nil || c.Reason == membership.ReasonCertManagerNotInstalled {
		t.Errorf("Available = %+v: cert-manager was not asked for", c)
	}
	w.noMembers("byo")

	ca, err := testpki.NewCA("user CA")
	if err != nil {
		t.Fatal(err)
	}
	w.putSecret("byo-server", tlsData(t, ca, peerLeaf("byo", w.ns), false))
	wait.Eventually(t, tlsSecretWait, "the seed is created once the Secret exists", func() error {
		ms, err := w.members(t.Context(), "byo")
		if err != nil || len(ms) != 1 {
			return fmt.Errorf("%d members: %w", len(ms), errors.Join(err, errNotYet))
		}
		return nil
	})
	wait.Eventually(t, convergeTimeout, "no longer TLSSecretMissing", func() error {
		if c := meta.FindStatusCondition(w.cluster("byo").Status.Conditions, etcdv1alpha2.ConditionDegraded); c == nil || c.Reason == membership.ReasonTLSSecretMissing {
			return fmt.Errorf("Degraded = %+v", c)
		}
		return nil
	})
}

// TestAuthSecretInvalid asks for auth with a credentials Secret whose password key is missing:
// Degraded=True/AuthSecretInvalid names the Secret, the key and the fix before auth is ever
// enabled; once the Secret holds a password the condition clears within AccessRetry.
func TestAuthSecretInvalid(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	ca, err := testpki.NewCA("auth-ca")
	if err != nil {
		t.Fatal(err)
	}
	// A server certificate that passes the operator's checks (docs/tls.md, "Validation of your
	// own certificates"): an invalid one would be reported ahead of the credentials.
	server := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "auth-server"}, Type: corev1.SecretTypeTLS,
		Data: tlsData(t, ca, serverLeaf("auth", w.ns), false)}
	root := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "auth-root"}, Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("root")}}
	for _, s := range []*corev1.Secret{server, root} {
		if err := k8s.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "auth"},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
			TLS:     &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "auth-server"}}},
			Auth:    &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "auth-root"}}},
	}
	if err := w.createCluster(c); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "Degraded=True/AuthSecretInvalid",
		w.condition("auth", etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, membership.ReasonAuthSecretInvalid,
			"Secret auth-root key password is missing or empty", "kubectl create secret generic auth-root"))
	root.Data["password"] = []byte("a-password")
	if err := k8s.Update(t.Context(), root); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, membership.AccessRetry+10*time.Second, "AuthSecretInvalid cleared", func() error {
		if d := meta.FindStatusCondition(w.cluster("auth").Status.Conditions, etcdv1alpha2.ConditionDegraded); d == nil || d.Reason == membership.ReasonAuthSecretInvalid {
			return fmt.Errorf("Degraded = %+v", d)
		}
		return nil
	})
}

// TestCertManagerNotInstalled asks cert-manager for the peer certificate of a cluster on this
// package's API server, which does not serve cert-manager's API (its CRDs are installed only in
// test/integration/certmanager): the real, discovery-backed probe finds it missing, and the
// cluster waits as Available=False/CertManagerNotInstalled, with no member.
func TestCertManagerNotInstalled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newTLSCluster("cm", &etcdv1alpha2.EtcdClusterTLS{
		Peer: &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: etcdv1alpha2.IssuerReference{Name: "ca"}}}})
	wait.Eventually(t, convergeTimeout, "Available=False/CertManagerNotInstalled",
		w.condition("cm", etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse, membership.ReasonCertManagerNotInstalled, "cert-manager"))
	w.noMembers("cm")
}

// installedProbe says cert-manager's API is served, whatever the API server says.
type installedProbe struct{}

func (installedProbe) CertManagerInstalled() (bool, error) { return true, nil }

// TestCertManagerGoneBeforeReprobe: the probe trusts its answer for a minute, so a pass may
// believe cert-manager installed after its CRDs went (here: never installed on this API server).
// The pass must not fail on the Certificates it cannot read or create: it goes on, and the
// cluster reports the missing peer Secret (Degraded=True/TLSSecretMissing) rather than nothing.
func TestCertManagerGoneBeforeReprobe(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController(etcdcluster.WithCertManagerProbe(installedProbe{}))
	w.newTLSCluster("cm", &etcdv1alpha2.EtcdClusterTLS{
		Peer: &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: etcdv1alpha2.IssuerReference{Name: "ca"}}}})
	wait.Eventually(t, convergeTimeout, "Degraded=True/TLSSecretMissing",
		w.condition("cm", etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, membership.ReasonTLSSecretMissing, "cm-peer-tls"))
	w.noMembers("cm")
}
