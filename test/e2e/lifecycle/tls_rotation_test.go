//go:build e2e

package lifecycle

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// TestCARotationUnderTraffic rotates both CAs of a client- and peer-mTLS cluster the way
// docs/tls.md, "Rotation", tells users to, under write traffic over mTLS whose client trusts
// both CAs and switches its own certificate when the leaves are re-issued: (1) the new CA beside
// the old one in every ca.crt, which rolls the members; (2) every leaf re-issued from the new
// CAs, which etcd picks up with no restart (checked: no Pod recreated or restarted, and each
// member serves the new certificates on both ports); (3) the old CA removed, which rolls them
// again. No client request may fail, and the history must be linearizable with no
// acknowledged write lost.
func TestCARotationUnderTraffic(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Security)
	requireOperator(f)
	const name = "carot"
	pki := newBYOPKI(f, name)
	ec := newCluster(f, name, 3)
	ec.Spec.TLS = pki.spec(name)
	createCluster(f, ec)
	waitConverged(f, name, 3, bootstrapTimeout)
	next := newRotationPKI(f, name)
	var current atomic.Pointer[tls.Certificate]
	current.Store(keyPair(f, pki.root))
	client, err := testpki.ClientConfig(append(append([]byte{}, pki.clientCA.CertPEM...), next.clientCA.CertPEM...), testpki.Pair{}, pki.serverName)
	if err != nil {
		t.Fatal(err)
	}
	client.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return current.Load(), nil }
	clusterAccess.Store(f.Namespace+"/"+name, client)

	_, endpoints := dialVoters(f, name)
	gen := traffic.New(traffic.Config{Endpoints: endpoints, Rate: trafficRate, MaxRequests: 1_000_000, MaxDuration: 30 * time.Minute, TLS: client})
	stop := runTraffic(f, gen)
	stopFollowing := f.FollowEndpoints(gen, voterSelector(name), true)
	waitAcked(f, gen, 50)
	start := time.Now()

	both := func(old, new *testpki.CA) []byte { return append(append([]byte{}, old.CertPEM...), new.CertPEM...) }
	step := time.Now()
	pods := voterPods(f, name)
	setCABundles(f, name, both(pki.clientCA, next.clientCA), both(pki.peerCA, next.peerCA))
	waitRecreated(f, name, pods)
	f.Record("ca-rotation-1-trust-both", since(step), "new CAs beside the old ones in ca.crt, to every member rolled and converged")

	step = time.Now()
	pods = voterPods(f, name)
	next.reissue(f, name, both(pki.clientCA, next.clientCA), both(pki.peerCA, next.peerCA))
	current.Store(keyPair(f, next.root))
	waitServing(f, name, next)
	requireSamePods(f, name, pods)
	f.Record("ca-rotation-2-leaves", since(step), "leaves re-issued from the new CAs, to every member serving them on 2379 and 2380; no Pod restarted")

	step = time.Now()
	pods = voterPods(f, name)
	setCABundles(f, name, next.clientCA.CertPEM, next.peerCA.CertPEM)
	waitRecreated(f, name, pods)
	f.Record("ca-rotation-3-drop-old", since(step), "old CAs removed from ca.crt, to every member rolled and converged")
	f.Record("ca-rotation-total", since(start), "all three steps")

	waitAcked(f, gen, gen.Stats().AckedPuts+50)
	stopFollowing()
	res := stop()
	requireNoFailedRequests(f, res, "ca-rotation", "a rotation of both CAs over mTLS")
}

// rotationPKI is the new generation of a byoPKI: new CAs and the leaves they sign.
type rotationPKI struct {
	clientCA, peerCA *testpki.CA
	root             testpki.Pair
}

func newRotationPKI(f *framework.Test, name string) *rotationPKI {
	f.T.Helper()
	clientCA, err := testpki.NewCA(name + "-client-ca-2")
	if err != nil {
		f.T.Fatal(err)
	}
	peerCA, err := testpki.NewCA(name + "-peer-ca-2")
	if err != nil {
		f.T.Fatal(err)
	}
	root, err := clientCA.Issue(testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
	if err != nil {
		f.T.Fatal(err)
	}
	return &rotationPKI{clientCA: clientCA, peerCA: peerCA, root: root}
}

// reissue writes leaves signed by the new CAs into the three Secrets, with the given bundles.
func (r *rotationPKI) reissue(f *framework.Test, name string, clientBundle, peerBundle []byte) {
	f.T.Helper()
	sn := desired.ServerCertificateNames(name, f.Namespace, "cluster.local")
	pn := desired.PeerCertificateNames(name, f.Namespace, "cluster.local")
	for secret, issue := range map[string]func() (testpki.Pair, error){
		name + "-server": func() (testpki.Pair, error) {
			return r.clientCA.Issue(testpki.Leaf{CommonName: name + "-server-2", DNSNames: sn.DNSNames, IPAddresses: sn.IPAddresses, Usages: testpki.Both})
		},
		name + "-peer": func() (testpki.Pair, error) {
			return r.peerCA.Issue(testpki.Leaf{CommonName: name + "-peer-2", DNSNames: pn.DNSNames, Usages: testpki.Both})
		},
		name + "-operator-client": func() (testpki.Pair, error) {
			return r.clientCA.Issue(testpki.Leaf{CommonName: desired.OperatorClientCommonName, Usages: testpki.ClientOnly})
		},
	} {
		pair, err := issue()
		if err != nil {
			f.T.Fatal(err)
		}
		bundle := clientBundle
		if secret == name+"-peer" {
			bundle = peerBundle
		}
		updateSecret(f, secret, map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM, "ca.crt": bundle})
	}
}

// setCABundles writes ca.crt of the server and operator client Secrets (client) and of the
// peer Secret (peer).
func setCABundles(f *framework.Test, name string, client, peer []byte) {
	f.T.Helper()
	updateSecret(f, name+"-server", map[string][]byte{"ca.crt": client})
	updateSecret(f, name+"-operator-client", map[string][]byte{"ca.crt": client})
	updateSecret(f, name+"-peer", map[string][]byte{"ca.crt": peer})
}

func updateSecret(f *framework.Test, name string, data map[string][]byte) {
	f.T.Helper()
	s, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for k, v := range data {
		s.Data[k] = v
	}
	if _, err := f.Kube.CoreV1().Secrets(f.Namespace).Update(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

func keyPair(f *framework.Test, p testpki.Pair) *tls.Certificate {
	f.T.Helper()
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		f.T.Fatal(err)
	}
	return &c
}

// podState is a voter Pod's UID and its etcd container's restart count.
type podState struct {
	uid      string
	restarts int32
}

func voterPods(f *framework.Test, name string) map[string]podState {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]podState{}
	for _, p := range pods.Items {
		st := podState{uid: string(p.UID)}
		for _, c := range p.Status.ContainerStatuses {
			st.restarts += c.RestartCount
		}
		out[p.Name] = st
	}
	return out
}

// waitRecreated waits until every Pod in before was recreated and the cluster converged.
func waitRecreated(f *framework.Test, name string, before map[string]podState) {
	f.T.Helper()
	if err := f.Poll("every member rolled", 10*time.Minute, func(ctx context.Context) (bool, string, error) {
		now := voterPods(f, name)
		for pod, st := range before {
			if n, ok := now[pod]; !ok || n.uid == st.uid {
				return false, fmt.Sprintf("%s not recreated yet", pod), nil
			}
		}
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, "", err
		}
		ok, state := convergedState(ctx, f, ec, len(before))
		return ok, state, nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// requireSamePods fails when a voter Pod was recreated or restarted since before.
func requireSamePods(f *framework.Test, name string, before map[string]podState) {
	f.T.Helper()
	now := voterPods(f, name)
	for pod, st := range before {
		if now[pod] != st {
			f.T.Errorf("Pod %s changed during the leaf renewal: %+v, was %+v", pod, now[pod], st)
		}
	}
}

// waitServing waits until every voter serves certificates of the new CAs on both ports.
func waitServing(f *framework.Test, name string, next *rotationPKI) {
	f.T.Helper()
	if err := f.Poll("every member serving the new leaves", 5*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			for port, ca := range map[string]*testpki.CA{"2379": next.clientCA, "2380": next.peerCA} {
				issuer, err := servedIssuer(p.Status.PodIP + ":" + port)
				if err != nil || issuer != ca.CommonName() {
					return false, fmt.Sprintf("%s:%s serves a certificate of %q (%v)", p.Name, port, issuer, err), nil
				}
			}
		}
		return true, "", nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// servedIssuer is the issuer common name of the certificate served at addr.
func servedIssuer(addr string) (string, error) {
	cert, err := servedCert(addr)
	if err != nil {
		return "", err
	}
	return cert.Issuer.CommonName, nil
}

// servedCert is the leaf certificate served at addr, read without verifying it.
func servedCert(addr string) (*x509.Certificate, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only the served certificate is read
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// TestRollingUpgradeMTLSAuth upgrades a 3-member cluster with client and peer mTLS and auth
// from etcd 3.5 to 3.6 under write traffic over mTLS: the roll restarts one member at a time,
// the operator keeps authenticating as root across it, and no acknowledged write is lost.
func TestRollingUpgradeMTLSAuth(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Upgrade, framework.Security)
	requireOperator(f)
	const name = "rollsec"
	pki := newBYOPKI(f, name)
	createPasswordSecret(f, name+"-root", "e2e-Upgrade-Pw-4c1x")
	ec := newCluster(f, name, 3)
	ec.Spec.Version = "3.5.35"
	ec.Spec.TLS = pki.spec(name)
	ec.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: name + "-root"}}
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	waitAuthLatched(f, name)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	roll(f, name, "roll-mtls-auth-3.6", "etcd upgrade to 3.6.16 on 3 mTLS+auth members", before,
		func(s *etcdv1alpha2.EtcdClusterSpec) { s.Version = "3.6.16" })
	requireRunsVersion(f, name, "3.6.16")
	ids := requireHealed(f, name, 3, clusterID)
	load.verify(f, "etcd 3.5 → 3.6 rolled across 3 mTLS+auth members")

	// Pause and resume (docs/lifecycle.md): one dormant member keeps its data and ID and wakes
	// first; the operator, which authenticates as root, grows the same cluster from it again.
	start := time.Now()
	setReplicas(f, name, 0)
	waitCondition(f, name, etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse, "Paused", 2*scaleTimeout)
	if err := f.WaitForNoPods(f.Ctx, f.Namespace, podSelector(name), time.Minute); err != nil {
		t.Fatal(err)
	}
	setReplicas(f, name, 3)
	after := requireHealed(f, name, 3, clusterID)
	kept := 0
	for m, id := range ids {
		if after[m] == id {
			kept++
		}
	}
	if kept != 1 {
		t.Errorf("members after pause and resume %v, were %v: want the dormant member back with its ID", after, ids)
	}
	f.Record("pause-resume-mtls-auth", since(start), "replicas 0 → paused → replicas 3 → converged, the dormant member back with its ID, same cluster ID")
}
