//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/pki"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// TestManagedTLS runs a cluster whose certificates the operator issues itself (spec.tls.managed,
// docs/tls.md), with auth: it bootstraps with no Secret of the user's but the password; an
// application client certificate signed with <c>-ca reads and writes; the members serve leaves
// of <c>-ca on 2379 and of <c>-peer-ca on 2380, and a client certificate of <c>-ca is refused on
// 2380; deleting the server leaf's Secret makes the operator issue a new leaf from the same CA,
// which the members serve with no Pod restarted; all under write traffic, linearizable, 0 lost.
func TestManagedTLS(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke, framework.Security)
	requireOperator(f)
	const name = "managed"
	createPasswordSecret(f, name+"-root", "e2e-Managed-Pw-8h2m")
	ec := newCluster(f, name, 3)
	ec.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}}
	ec.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: name + "-root"}}
	start := time.Now()
	createCluster(f, ec)
	// The test reaches etcd as an application would: with a client certificate it signs with
	// the cluster's client CA, which exists once the operator issued it.
	waitSecret(f, name+"-ca")
	clientCA := readCA(f, name+"-ca")
	app := issueFrom(f, clientCA, testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
	access, err := testpki.ClientConfig(secretData(f, name+"-ca")["tls.crt"], app, desired.MemberHost(name+"-e2e", name, f.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	clusterAccess.Store(f.Namespace+"/"+name, access)
	waitConverged(f, name, 3, bootstrapTimeout)
	f.Record("bootstrap-3-managed-tls", since(start), "create → converged, certificates issued by the operator")
	waitAuthLatched(f, name)
	peerCA := readCA(f, name+"-peer-ca")
	_, endpoints := dialVoters(f, name)
	gen := traffic.New(traffic.Config{Endpoints: endpoints, Rate: trafficRate, MaxRequests: 1_000_000, MaxDuration: 30 * time.Minute, TLS: accessOf(f, name)})
	stop := runTraffic(f, gen)
	stopFollowing := f.FollowEndpoints(gen, voterSelector(name), true)
	waitAcked(f, gen, 50)

	requireServedBy(f, name, "2379", clientCA.Cert.Subject.CommonName)
	requireServedBy(f, name, "2380", peerCA.Cert.Subject.CommonName)
	pods := voterPods(f, name)
	ip := firstVoterIP(f, name)
	if err := peerGet("https://"+ip+":2380/members", presenting(accessOf(f, name), app))(f.Ctx); err == nil {
		t.Error("a client certificate of the cluster's client CA was accepted on the peer port")
	}
	renewServerLeaf(f, name)
	requireSamePods(f, name, pods)

	waitAcked(f, gen, gen.Stats().AckedPuts+50)
	stopFollowing()
	f.VerifyTraffic(stop(), 100, "writes over the operator-managed mTLS during a leaf re-issue")
}

// waitSecret waits until Secret name exists.
func waitSecret(f *framework.Test, name string) {
	f.T.Helper()
	if err := f.Poll("Secret "+name, time.Minute, func(ctx context.Context) (bool, string, error) {
		_, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err), nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// readCA loads the CA in Secret name.
func readCA(f *framework.Test, name string) *pki.CA {
	f.T.Helper()
	d := secretData(f, name)
	ca, err := pki.LoadCA(d["tls.crt"], d["tls.key"])
	if err != nil {
		f.T.Fatalf("loading the CA of Secret %s: %v", name, err)
	}
	return ca
}

func secretData(f *framework.Test, name string) map[string][]byte {
	f.T.Helper()
	s, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return s.Data
}

// issueFrom signs l with ca, as an application owner with access to the CA Secret would.
func issueFrom(f *framework.Test, ca *pki.CA, l testpki.Leaf) testpki.Pair {
	f.T.Helper()
	kp, err := ca.Issue(pki.LeafRequest{CommonName: l.CommonName, Usages: l.Usages, Validity: 24 * time.Hour}, time.Now())
	if err != nil {
		f.T.Fatal(err)
	}
	return testpki.Pair{CertPEM: kp.Cert, KeyPEM: kp.Key}
}

// requireServedBy checks every voter serves a certificate issued by issuer on port.
func requireServedBy(f *framework.Test, name, port, issuer string) {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, p := range pods.Items {
		got, err := servedIssuer(p.Status.PodIP + ":" + port)
		if err != nil || got != issuer {
			f.T.Errorf("%s:%s serves a certificate of %q (%v), want %q", p.Name, port, got, err, issuer)
		}
	}
}

func firstVoterIP(f *framework.Test, name string) string {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil || len(pods.Items) == 0 {
		f.T.Fatalf("listing voter Pods: %v", err)
	}
	return pods.Items[0].Status.PodIP
}

// renewServerLeaf deletes <c>-server-tls and waits until the operator re-issued it from the same
// CA (ca.crt unchanged) and every member serves the new leaf.
func renewServerLeaf(f *framework.Test, name string) {
	f.T.Helper()
	secret := name + "-server-tls"
	before := secretData(f, secret)
	old := leafSerial(f, before["tls.crt"])
	start := time.Now()
	if err := f.Kube.CoreV1().Secrets(f.Namespace).Delete(f.Ctx, secret, metav1.DeleteOptions{}); err != nil {
		f.T.Fatal(err)
	}
	var serial string
	if err := f.Poll("the server leaf re-issued", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		s, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if string(s.Data["ca.crt"]) != string(before["ca.crt"]) {
			f.T.Errorf("the re-issued leaf's ca.crt differs: members would roll")
		}
		serial = leafSerial(f, s.Data["tls.crt"])
		return serial != old, "serial " + serial, nil
	}); err != nil {
		f.T.Fatal(err)
	}
	if err := f.Poll("every member serving the new leaf", 5*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			got, err := servedSerial(p.Status.PodIP + ":2379")
			if err != nil || got != serial {
				return false, fmt.Sprintf("%s serves %s (%v)", p.Name, got, err), nil
			}
		}
		return true, "", nil
	}); err != nil {
		f.T.Fatal(err)
	}
	f.Record("managed-leaf-reissued-served", since(start), "server leaf Secret deleted → every member serves the re-issued leaf, no restart")
}

func leafSerial(f *framework.Test, certPEM []byte) string {
	f.T.Helper()
	certs, err := pki.ParseCertificates(certPEM)
	if err != nil || len(certs) == 0 {
		f.T.Fatalf("parsing a leaf: %v", err)
	}
	return certs[0].SerialNumber.String()
}

// servedSerial is the serial number of the certificate served at addr.
func servedSerial(addr string) (string, error) {
	cert, err := servedCert(addr)
	if err != nil {
		return "", err
	}
	return cert.SerialNumber.String(), nil
}
