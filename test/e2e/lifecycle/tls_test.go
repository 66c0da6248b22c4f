//go:build e2e

package lifecycle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// TestMutualTLSWithAuth runs a cluster with client mTLS, peer mTLS and root auth from the
// user's own Secrets (docs/tls.md, docs/auth.md) under write traffic over mTLS: it bootstraps,
// latches status.authEnabled, scales 3→5, heals a deleted Pod, scales back to 3, and takes a
// password change from the Secret; every bad handshake and bad credential of the negative
// table is refused, the metrics port serves only metrics and health, and neither password
// appears in the operator's logs, Events or the custom resources.
func TestMutualTLSWithAuth(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke, framework.Security)
	requireOperator(f)
	const name, first, second = "mtls", "e2e-First-Pw-7f3k", "e2e-Second-Pw-9q2z"
	pki := newBYOPKI(f, name)
	createPasswordSecret(f, name+"-root", first)
	ec := newCluster(f, name, 3)
	ec.Spec.TLS = pki.spec(name)
	ec.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: name + "-root"}}
	start := time.Now()
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	f.Record("bootstrap-3-mtls", since(start), "3 members, client and peer mTLS, to converged")
	waitAuthLatched(f, name)
	f.Record("bootstrap-3-mtls-auth", since(start), "to status.authEnabled")
	checkMembership(f, ec, 3)

	_, endpoints := dialVoters(f, name)
	gen := traffic.New(traffic.Config{Endpoints: endpoints, Rate: trafficRate, MaxRequests: 1_000_000, MaxDuration: 30 * time.Minute,
		TLS: accessOf(f, name)})
	stop := runTraffic(f, gen)
	stopFollowing := f.FollowEndpoints(gen, voterSelector(name), true)
	waitAcked(f, gen, 50)

	for _, n := range []int{5} {
		setReplicas(f, name, int32(n))
		waitConverged(f, name, n, scaleTimeout)
	}
	healOnePod(f, name, 5)
	setReplicas(f, name, 3)
	waitConverged(f, name, 3, scaleTimeout)
	changePassword(f, pki, name, first, second)
	waitAcked(f, gen, gen.Stats().AckedPuts+50)
	stopFollowing()
	f.VerifyTraffic(stop(), 100, "writes over mTLS during scale, heal and a password change")
	// The Pods' IPs changed during the heal and the scale-down: dial the voters there are now.
	after, afterEndpoints := dialVoters(f, name)
	f.RequireHashKVEqual(after, afterEndpoints, time.Minute)
	refusals(f, pki, name, second)
	n := f.RequireNoLeak([]schema.GroupVersionResource{
		etcdv1alpha2.GroupVersion.WithResource("etcdclusters"), etcdv1alpha2.GroupVersion.WithResource("etcdmembers"),
	}, first, second)
	f.RecordBytes("password-canary-searched", int64(n), "operator logs, Events, EtcdClusters and EtcdMembers searched for both passwords: none found")
}

// runTraffic starts gen and returns a function that stops it and returns its result.
func runTraffic(f *framework.Test, gen *traffic.Generator) func() *traffic.Result {
	ctx, cancel := context.WithCancel(f.Ctx)
	done := make(chan struct{})
	var res *traffic.Result
	var err error
	go func() {
		defer close(done)
		res, err = gen.Run(ctx)
	}()
	f.T.Cleanup(cancel)
	return func() *traffic.Result {
		cancel()
		<-done
		if err != nil && !errors.Is(err, context.Canceled) {
			f.T.Fatalf("traffic: %v", err)
		}
		return res
	}
}

// waitAuthLatched waits for status.authEnabled and the AuthEnabled Event.
func waitAuthLatched(f *framework.Test, name string) {
	f.T.Helper()
	if err := f.Poll("status.authEnabled", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, "", err
		}
		return ec.Status.AuthEnabled, clusterState(ec), nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// healOnePod deletes one member's Pod and waits for the cluster to converge again.
func healOnePod(f *framework.Test, name string, n int) {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil || len(pods.Items) == 0 {
		f.T.Fatalf("listing voter Pods: %v (%d)", err, len(pods.Items))
	}
	start := time.Now()
	if err := f.Kube.CoreV1().Pods(f.Namespace).Delete(f.Ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		f.T.Fatal(err)
	}
	waitConverged(f, name, n, scaleTimeout)
	f.Record("heal-deleted-pod-mtls", since(start), "a voter's Pod deleted, to converged")
}

// changePassword writes the new password into the Secret and waits until etcd accepts it and
// refuses the old one.
func changePassword(f *framework.Test, pki *byoPKI, name, old, password string) {
	f.T.Helper()
	s, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Ctx, name+"-root", metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	s.Data["password"] = []byte(password)
	start := time.Now()
	if _, err := f.Kube.CoreV1().Secrets(f.Namespace).Update(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	if err := f.Poll("etcd accepts the new password", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		err := loginAs(ctx, f, pki, name, "root", password)
		return err == nil, fmt.Sprint(err), nil
	}); err != nil {
		f.T.Fatal(err)
	}
	f.Record("password-change", since(start), "Secret updated to etcd accepting the new password")
	if err := loginAs(f.Ctx, f, pki, name, "root", old); err == nil {
		f.T.Error("etcd still accepts the old password")
	}
}

// loginAs reads a key as user with password, over a certificate that maps to no etcd user.
func loginAs(ctx context.Context, f *framework.Test, pki *byoPKI, name, user, password string) error {
	eps, err := f.MemberEndpoints(ctx, f.Namespace, voterSelector(name), true)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: eps[:1], TLS: pki.config(pki.user), Username: user, Password: password, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_, err = c.Get(ctx, "e2e-login-probe")
	return err
}

// refusals runs the negative table (docs/tls.md, "What is refused") and records each outcome.
func refusals(f *framework.Test, pki *byoPKI, name, password string) {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil || len(pods.Items) == 0 {
		f.T.Fatalf("listing voter Pods: %v", err)
	}
	ip := pods.Items[0].Status.PodIP
	otherCA, err := testpki.NewCA("stranger")
	if err != nil {
		f.T.Fatal(err)
	}
	stranger, _ := otherCA.Issue(testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
	expired, _ := pki.clientCA.Issue(testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	// Signed by the peer CA itself: only --peer-cert-allowed-hostname refuses it (docs/tls.md).
	peerClient, _ := pki.peerCA.Issue(testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
	clientOnPeer := presenting(pki.config(testpki.Pair{}), peerClient)
	client := "https://" + ip + ":2379"
	for _, c := range []struct {
		name string
		try  func(context.Context) error
	}{
		{"no client certificate", handshake(ip+":2379", pki.config(testpki.Pair{}))},
		{"certificate from another CA", handshake(ip+":2379", presenting(pki.config(testpki.Pair{}), stranger))},
		{"expired certificate", handshake(ip+":2379", presenting(pki.config(testpki.Pair{}), expired))},
		{"client-only certificate of the peer CA on the peer port", peerGet("https://"+ip+":2380/members", clientOnPeer)},
		{"plaintext to the client port", kvWith("http://"+ip+":2379", nil, "", "")},
		{"wrong password", kvWith(client, pki.config(pki.user), "root", password+"-wrong")},
		{"removed user", removedUser(f, pki, client, password)},
	} {
		err := c.try(f.Ctx)
		refused := int64(0)
		if err != nil {
			refused = 1
		} else {
			f.T.Errorf("%s: accepted, want refused", c.name)
		}
		f.RecordCount("refused: "+c.name, refused, fmt.Sprint(err))
	}
	metricsPortServesOnlyMetrics(f, ip)
}

// kvWith returns a try that reads a key at ep with t and the credentials.
func kvWith(ep string, t *tls.Config, user, password string) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: []string{ep}, TLS: t, Username: user, Password: password, DialTimeout: 3 * time.Second})
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		_, err = c.Get(ctx, "e2e-refusal-probe", clientv3.WithSerializable())
		return err
	}
}

// presenting makes t present pair whatever CAs the server asks for: Go's client would otherwise
// send no certificate that none of the server's acceptable CAs signed, and the refusal tested
// would be of a missing certificate.
func presenting(t *tls.Config, pair testpki.Pair) *tls.Config {
	c, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		panic(err) // issued by the test itself
	}
	t.Certificates = nil
	t.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	return t
}

// handshake returns a try that completes a TLS handshake with t at addr and waits for the
// server's verdict on the client certificate: under TLS 1.3 the server verifies it after the
// client's handshake is done and answers the first read with an alert. A read that times out
// means the server accepted the certificate and waits for a request.
func handshake(addr string, t *tls.Config) func(context.Context) error {
	return func(ctx context.Context) error {
		d := tls.Dialer{Config: t, NetDialer: &net.Dialer{Timeout: 3 * time.Second}}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	}
}

// peerGet returns a try that asks the peer API for its members with t.
func peerGet(url string, t *tls.Config) func(context.Context) error {
	return func(ctx context.Context) error {
		t.ServerName, t.VerifyConnection = "", nil
		t.InsecureSkipVerify = true // only the server's refusal of the client is under test
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: t}}
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		return nil
	}
}

// removedUser adds user app as root (by certificate), removes it, and returns a try that logs in
// as app.
func removedUser(f *framework.Test, pki *byoPKI, ep, _ string) func(context.Context) error {
	root, err := etcdconn.New(f.Ctx, etcdconn.Options{Endpoints: []string{ep}, TLS: pki.config(pki.root), DialTimeout: 5 * time.Second})
	if err != nil {
		f.T.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	if _, err := root.UserAdd(f.Ctx, "app", "app-Pw-1"); err != nil {
		f.T.Fatal(err)
	}
	if err := kvWith(ep, pki.config(pki.user), "app", "app-Pw-1")(f.Ctx); err != nil && !strings.Contains(err.Error(), "permission denied") {
		f.T.Fatalf("user app cannot log in before its removal: %v", err)
	}
	if _, err := root.UserDelete(f.Ctx, "app"); err != nil {
		f.T.Fatal(err)
	}
	return kvWith(ep, pki.config(pki.user), "app", "app-Pw-1")
}

// metricsPortServesOnlyMetrics checks the plaintext metrics port answers /metrics, /livez and
// /readyz, and nothing of the client API.
func metricsPortServesOnlyMetrics(f *framework.Test, ip string) {
	f.T.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	for path, want := range map[string]int{"/metrics": 200, "/livez": 200, "/readyz": 200, "/v3/kv/range": 404, "/version": 404, "/members": 404} {
		resp, err := c.Get("http://" + ip + ":2381" + path)
		if err != nil {
			f.T.Errorf("GET %s on the metrics port: %v", path, err)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			f.T.Errorf("GET %s on the metrics port: %d, want %d", path, resp.StatusCode, want)
		}
		f.RecordCount("metrics port "+path, int64(resp.StatusCode), "HTTP status on plaintext port 2381")
	}
}
