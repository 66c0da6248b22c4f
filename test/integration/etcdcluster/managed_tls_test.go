package etcdcluster_test

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/pki"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// managedSecretNames are the Secrets of spec.tls.managed for cluster c, CAs first.
func managedSecretNames(c string) []string {
	return []string{c + "-ca", c + "-peer-ca", c + "-server-tls", c + "-peer-tls", c + "-operator-client-tls"}
}

// secret reads Secret name, uncached.
func (w *world) secret(name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := k8s.Get(w.t.Context(), types.NamespacedName{Namespace: w.ns, Name: name}, s); err != nil {
		return nil, err
	}
	return s, nil
}

// managedSecrets waits for the five Secrets of managed cluster c and returns them by name.
func (w *world) managedSecrets(c string) map[string]*corev1.Secret {
	w.t.Helper()
	out := map[string]*corev1.Secret{}
	wait.Eventually(w.t, convergeTimeout, c+": the managed Secrets exist", func() error {
		for _, name := range managedSecretNames(c) {
			s, err := w.secret(name)
			if err != nil {
				return err
			}
			out[name] = s
		}
		return nil
	})
	return out
}

// leafOf parses a Secret's certificate.
func leafOf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	certs, err := pki.ParseCertificates(s.Data[corev1.TLSCertKey])
	if err != nil {
		t.Fatalf("Secret %s: %v", s.Name, err)
	}
	return certs[0]
}

// verifies checks leaf against the ca.crt of ca for host (when set) and usage.
func verifies(leaf *x509.Certificate, ca *corev1.Secret, host string, usage x509.ExtKeyUsage) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.Data["ca.crt"]) {
		return fmt.Errorf("Secret %s has no CA in ca.crt", ca.Name)
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// TestManagedTLS: a cluster with spec.tls.managed gets two CAs and three leaves, owned by the
// cluster and labelled with its labels; each leaf verifies against its CA for the names and
// usages docs/tls.md lists, and no client certificate verifies against the peer CA; the seed
// mounts them. A leaf near its end is renewed, by the same CA, without a change of ca.crt.
func TestManagedTLS(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newTLSCluster("m", &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}})
	secrets := w.managedSecrets("m")
	checkManagedSecrets(t, w.cluster("m"), secrets)
	checkManagedChains(t, w.ns, secrets)

	w.seedCreated("m", convergeTimeout)
	ms, err := w.members(t.Context(), "m")
	if err != nil {
		t.Fatal(err)
	}
	if tls := ms[0].Spec.TLS; tls == nil || tls.ClientServerSecretRef.Name != "m-server-tls" || !tls.ClientMTLS || tls.PeerSecretRef.Name != "m-peer-tls" {
		t.Errorf("seed TLS %+v", ms[0].Spec.TLS)
	}
	w.renewsShortLeaf(secrets)
}

// checkManagedSecrets checks the five Secrets' type, owner, labels and keys.
func checkManagedSecrets(t *testing.T, cluster *etcdv1alpha2.EtcdCluster, secrets map[string]*corev1.Secret) {
	t.Helper()
	for _, name := range managedSecretNames(cluster.Name) {
		s := secrets[name]
		owner := metav1.GetControllerOf(s)
		if s.Type != corev1.SecretTypeTLS || owner == nil || owner.UID != cluster.UID || s.Labels[etcdv1alpha2.LabelCluster] != cluster.Name {
			t.Errorf("Secret %s: type %s, controller %+v, labels %v", name, s.Type, owner, s.Labels)
		}
		if len(s.Data["tls.crt"]) == 0 || len(s.Data["tls.key"]) == 0 || len(s.Data["ca.crt"]) == 0 {
			t.Errorf("Secret %s lacks a key", name)
		}
	}
}

// checkManagedChains checks that each leaf of cluster m verifies against its CA for its names
// and usages, and against nothing else.
func checkManagedChains(t *testing.T, ns string, secrets map[string]*corev1.Secret) {
	t.Helper()
	clientCA, peerCA := secrets["m-ca"], secrets["m-peer-ca"]
	server, peer, op := leafOf(t, secrets["m-server-tls"]), leafOf(t, secrets["m-peer-tls"]), leafOf(t, secrets["m-operator-client-tls"])
	newMember := desired.MemberHost("m-zzzzz", "m", ns)
	for _, c := range []struct {
		what  string
		leaf  *x509.Certificate
		ca    *corev1.Secret
		host  string
		usage x509.ExtKeyUsage
	}{
		{"server for a new member", server, clientCA, newMember, x509.ExtKeyUsageServerAuth},
		{"server for the client Service", server, clientCA, "m-client." + ns + ".svc", x509.ExtKeyUsageServerAuth},
		{"server with the cluster domain", server, clientCA, "m-zzzzz.m." + ns + ".svc.cluster.local", x509.ExtKeyUsageServerAuth},
		{"server as a client (the gateway)", server, clientCA, "", x509.ExtKeyUsageClientAuth},
		{"peer serving a new member", peer, peerCA, newMember, x509.ExtKeyUsageServerAuth},
		{"peer dialling", peer, peerCA, "", x509.ExtKeyUsageClientAuth},
		{"operator client", op, clientCA, "", x509.ExtKeyUsageClientAuth},
	} {
		if err := verifies(c.leaf, c.ca, c.host, c.usage); err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	if err := verifies(op, peerCA, "", x509.ExtKeyUsageClientAuth); err == nil {
		t.Error("the operator's client certificate is accepted on the peer port")
	}
	if err := verifies(peer, peerCA, "m-client."+ns+".svc", x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("the peer certificate covers the client Service")
	}
	if op.Subject.CommonName != desired.OperatorClientCommonName || slices.Contains(op.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		t.Errorf("operator client certificate: CN %q, usages %v", op.Subject.CommonName, op.ExtKeyUsage)
	}
	if !bytes.Equal(secrets["m-server-tls"].Data["ca.crt"], clientCA.Data["ca.crt"]) || !bytes.Equal(secrets["m-peer-tls"].Data["ca.crt"], peerCA.Data["ca.crt"]) {
		t.Error("a leaf's ca.crt is not its CA's bundle")
	}
	if life := server.NotAfter.Sub(server.NotBefore); life < 89*24*time.Hour || life > 91*24*time.Hour {
		t.Errorf("server certificate valid for %s, want 90 days", life)
	}
}

// renewsShortLeaf replaces cluster m's server leaf with one two thirds into a 3-hour life,
// signed by the cluster's CA, and waits for the operator to renew it by the same CA, keeping
// ca.crt and both CA Secrets as they were.
func (w *world) renewsShortLeaf(secrets map[string]*corev1.Secret) {
	t := w.t
	t.Helper()
	clientCA := secrets["m-ca"]
	server := leafOf(t, secrets["m-server-tls"])
	ca, err := pki.LoadCA(clientCA.Data["tls.crt"], clientCA.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	want := pki.Requirement{CommonName: server.Subject.CommonName, DNSNames: server.DNSNames, IPAddresses: server.IPAddresses, Usages: server.ExtKeyUsage}
	short, err := ca.Issue(want.Request(3*time.Hour), time.Now().Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	old := secrets["m-server-tls"].DeepCopy()
	old.Data["tls.crt"], old.Data["tls.key"] = short.Cert, short.Key
	if err := k8s.Update(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	newMember := desired.MemberHost("m-zzzzz", "m", w.ns)
	wait.Eventually(t, convergeTimeout, "the short server leaf is renewed", func() error {
		s, err := w.secret("m-server-tls")
		if err != nil {
			return err
		}
		leaf := leafOf(t, s)
		if leaf.NotAfter.Sub(leaf.NotBefore) < 89*24*time.Hour || leaf.SerialNumber.Cmp(server.SerialNumber) == 0 {
			return fmt.Errorf("the leaf is valid until %s: %w", leaf.NotAfter, errNotYet)
		}
		if !bytes.Equal(s.Data["ca.crt"], clientCA.Data["ca.crt"]) {
			return errors.New("the renewal changed ca.crt")
		}
		return verifies(leaf, clientCA, newMember, x509.ExtKeyUsageServerAuth)
	})
	wait.Eventually(t, convergeTimeout, "one CertificateRenewed Event", func() error {
		if n := w.eventCount("m", "CertificateRenewed"); n != 1 {
			return fmt.Errorf("%d CertificateRenewed Events: %w", n, errNotYet)
		}
		return nil
	})
	for _, name := range []string{"m-ca", "m-peer-ca"} {
		s, err := w.secret(name)
		if err != nil || s.ResourceVersion != secrets[name].ResourceVersion {
			t.Errorf("CA Secret %s was written again (%v)", name, err)
		}
	}
}

// TestManagedTLSUsesTheStoredCA: a CA Secret that exists when the cluster is created (the
// state a crash after the CA's write leaves, or a CA the user brings) signs the leaves; it is
// never replaced.
func TestManagedTLSUsesTheStoredCA(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	kp, err := pki.NewCA("user-provided CA", pki.CAValidity, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w.putSecret("pre-ca", map[string][]byte{"tls.crt": kp.Cert, "tls.key": kp.Key, "ca.crt": kp.Cert})
	before, err := w.secret("pre-ca")
	if err != nil {
		t.Fatal(err)
	}
	w.newTLSCluster("pre", &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}})
	secrets := w.managedSecrets("pre")
	for _, name := range []string{"pre-server-tls", "pre-operator-client-tls"} {
		if err := verifies(leafOf(t, secrets[name]), before, "", x509.ExtKeyUsageClientAuth); err != nil {
			t.Errorf("%s is not signed by the stored CA: %v", name, err)
		}
	}
	if secrets["pre-ca"].ResourceVersion != before.ResourceVersion {
		t.Error("the stored CA Secret was written")
	}
	w.seedCreated("pre", convergeTimeout)
}
