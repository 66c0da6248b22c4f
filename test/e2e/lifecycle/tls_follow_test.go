//go:build e2e

package lifecycle

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/pki"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// followInterval is how often a followingClient reads the cluster's Secrets: an application
// that mounts them sees a change within about a minute (the kubelet's sync), which the two
// minutes between steps 2 and 3 of a rotation cover (docs/tls.md, "CA rotation"); the test
// follows faster so that a failure points at the operator, not at the client.
const followInterval = 2 * time.Second

// followingClient is an application that does what docs/tls.md asks of the clients of a
// managed cluster during a CA rotation or the move to managed certificates: it trusts the
// ca.crt of <c>-ca (plus the roots it started with), and once the members' server certificate is
// signed by the CA that <c>-ca signs with, it presents a client certificate of that CA, as a
// cert-manager CA Issuer over <c>-ca would re-issue it. Its tls.Config reads both through
// atomics, so every clone (the traffic generator's, the helpers') follows too.
type followingClient struct {
	f          *framework.Test
	name       string
	serverName string
	extraRoots []byte

	verify   atomic.Pointer[tls.Config]
	cert     atomic.Pointer[tls.Certificate]
	issuer   atomic.Pointer[x509.Certificate]
	switches atomic.Int32
}

// newFollowingClient starts with roots and the client certificate initial, signed by issuer,
// and registers its configuration as the cluster's access for the helpers.
func newFollowingClient(f *framework.Test, name, serverName string, roots []byte, initial testpki.Pair, issuer *x509.Certificate) (*followingClient, *tls.Config) {
	f.T.Helper()
	c := &followingClient{f: f, name: name, serverName: serverName, extraRoots: roots}
	c.setRoots(roots)
	c.cert.Store(keyPair(f, initial))
	c.issuer.Store(issuer)
	cfg, err := testpki.ClientConfig(roots, testpki.Pair{}, serverName)
	if err != nil {
		f.T.Fatal(err)
	}
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c.cert.Load(), nil }
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return c.verify.Load().VerifyConnection(cs) }
	clusterAccess.Store(f.Namespace+"/"+name, cfg)
	return c, cfg
}

func (c *followingClient) setRoots(roots []byte) {
	cfg, err := testpki.ClientConfig(roots, testpki.Pair{}, c.serverName)
	if err != nil {
		c.f.T.Errorf("trusting %s's bundle: %v", c.name, err)
		return
	}
	c.verify.Store(cfg)
}

// follow refreshes the client every followInterval until the returned function is called.
func (c *followingClient) follow() (stop func()) {
	ctx, cancel := context.WithCancel(c.f.Ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(followInterval)
		defer t.Stop()
		for {
			c.refresh(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	c.f.T.Cleanup(cancel)
	return func() { cancel(); <-done }
}

// refresh trusts <c>-ca's bundle and switches the client certificate once the server
// certificate is signed by the CA <c>-ca signs with.
func (c *followingClient) refresh(ctx context.Context) {
	caSecret, err := c.f.Kube.CoreV1().Secrets(c.f.Namespace).Get(ctx, c.name+"-ca", metav1.GetOptions{})
	if err != nil {
		return // not issued yet, or the API is briefly away: keep what works
	}
	c.setRoots(append(append([]byte{}, c.extraRoots...), caSecret.Data["ca.crt"]...))
	server, err := c.f.Kube.CoreV1().Secrets(c.f.Namespace).Get(ctx, c.name+"-server-tls", metav1.GetOptions{})
	if err != nil {
		return
	}
	ca, err := pki.LoadCA(caSecret.Data["tls.crt"], caSecret.Data["tls.key"])
	if err != nil || ca.Cert.Equal(c.issuer.Load()) {
		return
	}
	leaves, err := pki.ParseCertificates(server.Data["tls.crt"])
	if err != nil || len(leaves) == 0 || leaves[0].CheckSignatureFrom(ca.Cert) != nil {
		return
	}
	kp, err := ca.Issue(pki.LeafRequest{CommonName: "root", Usages: testpki.ClientOnly, Validity: 24 * time.Hour}, time.Now())
	if err != nil {
		c.f.T.Errorf("issuing an application certificate from %s-ca: %v", c.name, err)
		return
	}
	c.cert.Store(keyPair(c.f, testpki.Pair{CertPEM: kp.Cert, KeyPEM: kp.Key}))
	c.issuer.Store(ca.Cert)
	c.switches.Add(1)
}

// waitEventCount waits until n Events of reason regard cluster name.
func waitEventCount(f *framework.Test, name, reason string, n int, timeout time.Duration) {
	f.T.Helper()
	if err := f.Poll(reason+" Events", timeout, func(context.Context) (bool, string, error) {
		got := eventCount(f, name, reason)
		return got >= n, fmt.Sprintf("%s Events: %d", reason, got), nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// killOperator kills the operator's process with SIGKILL, as a node's OOM killer or a crash
// would, and waits until its container runs again: a new process, restarted in place.
func killOperator(f *framework.Test) {
	f.T.Helper()
	before, err := findOperator(f)
	if err != nil {
		f.T.Fatal(err)
	}
	if err := syscall.Kill(before.pid, syscall.SIGKILL); err != nil {
		f.T.Fatalf("killing the operator (%s): %v", before, err)
	}
	if err := f.Poll("the operator running again", operatorReadyTimeout, func(ctx context.Context) (bool, string, error) {
		if before.alive() == nil {
			return false, "the killed process still runs", nil
		}
		after, err := findOperator(f)
		if err != nil {
			return false, err.Error(), nil
		}
		return after.pid != before.pid, after.String(), nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// caBundleCount is how many certificates the ca.crt of Secret name holds.
func caBundleCount(f *framework.Test, name string) int {
	f.T.Helper()
	certs, err := pki.ParseCertificates(secretData(f, name)["ca.crt"])
	if err != nil {
		f.T.Fatalf("parsing ca.crt of Secret %s: %v", name, err)
	}
	return len(certs)
}

// requireRefused fails unless a handshake presenting pair to every voter's client port is
// refused.
func requireRefused(f *framework.Test, name string, pair testpki.Pair, what string) {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, p := range pods.Items {
		if err := handshake(p.Status.PodIP+":2379", presenting(accessOf(f, name), pair))(f.Ctx); err == nil {
			f.T.Errorf("%s: %s accepted it", what, p.Name)
		}
	}
}

// mountsManaged reports whether every EtcdMember's Pod mounts the managed Secrets.
func mountsManaged(ctx context.Context, f *framework.Test, name string) (bool, string, error) {
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		return false, "", err
	}
	for _, p := range pods.Items {
		if !mountsSecret(&p, name+"-server-tls") || !mountsSecret(&p, name+"-peer-tls") {
			return false, p.Name + " does not mount the managed Secrets yet", nil
		}
	}
	return len(pods.Items) > 0, "", nil
}

func mountsSecret(p *corev1.Pod, secret string) bool {
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret {
			return true
		}
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.Secret != nil && s.Secret.Name == secret {
				return true
			}
		}
	}
	return false
}

// firstCert parses the first certificate of certPEM.
func firstCert(f *framework.Test, certPEM []byte) *x509.Certificate {
	f.T.Helper()
	certs, err := pki.ParseCertificates(certPEM)
	if err != nil || len(certs) == 0 {
		f.T.Fatalf("parsing a certificate: %v", err)
	}
	return certs[0]
}

// requireNoFailedRequests records the longest write gap and the failed requests of res as
// <prefix>-write-gap-max and <prefix>-failed-requests, fails the test on any failed request (a
// rotation promises none), and checks the history (VerifyTraffic).
func requireNoFailedRequests(f *framework.Test, res *traffic.Result, prefix, during string) {
	f.T.Helper()
	f.Record(prefix+"-write-gap-max", res.WriteGap.Length, "longest interval without an acknowledged write during "+during+" (target ≤ 2 s)")
	failed := res.Counts.UnknownPuts + res.FailedGets
	f.RecordCount(prefix+"-failed-requests", int64(failed), "puts with an unknown outcome and failed gets during "+during)
	if failed != 0 {
		f.T.Errorf("%d puts failed and %d gets failed during %s, want none", res.Counts.UnknownPuts, res.FailedGets, during)
	}
	f.VerifyTraffic(res, 100, "writes during "+during)
}

// waitRolledAfter waits until every voter of cluster name runs in a Pod created no earlier than
// the last Event of reason, and the cluster converged: the last step of a rotation or a move
// changes the bundles, so the members restart once more after it, and a status that says
// converged before that roll began must not end the wait.
func waitRolledAfter(f *framework.Test, name, reason string, n int, timeout time.Duration) {
	f.T.Helper()
	since := lastEventTime(f, name, reason).Truncate(time.Second)
	if err := f.Poll("every member restarted after the last "+reason, timeout, func(ctx context.Context) (bool, string, error) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, p := range pods.Items {
			if p.CreationTimestamp.Time.Before(since) {
				return false, fmt.Sprintf("%s was created at %s, before %s", p.Name, p.CreationTimestamp.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339)), nil
			}
		}
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		ok, state := convergedState(ctx, f, ec, n)
		return ok && len(pods.Items) == n, state, nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// lastEventTime is when the newest Event of reason regarding cluster name happened.
func lastEventTime(f *framework.Test, name, reason string) time.Time {
	f.T.Helper()
	var last time.Time
	for _, e := range clusterEvents(f, name) {
		if e.Reason != reason {
			continue
		}
		for _, t := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time, e.FirstTimestamp.Time} {
			if t.After(last) {
				last = t
			}
		}
	}
	if last.IsZero() {
		f.T.Fatalf("no %s Event on %s", reason, name)
	}
	return last
}
