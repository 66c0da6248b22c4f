//go:build e2e

package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
	"github.com/etcd-operator/etcd-operator/test/utils/hashkv"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// MemberEndpoints returns the client URLs of the Pods matching selector in namespace, by Pod IP
// (never by DNS name: the tests run on the host). Pods without an IP are left out and named in
// the error only when none has one.
func (s *Suite) MemberEndpoints(ctx context.Context, namespace, selector string, useTLS bool) ([]string, error) {
	pods, err := s.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing etcd Pods %q in %s: %w", selector, namespace, err)
	}
	eps, withoutIP := etcdconn.PodEndpoints(pods.Items, etcdconn.ClientPort, useTLS)
	if len(eps) == 0 {
		return nil, fmt.Errorf("no etcd Pod %q in %s has an IP (without: %v)", selector, namespace, withoutIP)
	}
	return eps, nil
}

// DialMembers dials every member matching selector in namespace by Pod IP. The client is closed
// when the test ends.
func (f *Test) DialMembers(selector string, tlsConfig *tls.Config) (*clientv3.Client, []string) {
	f.T.Helper()
	eps, err := f.MemberEndpoints(f.Ctx, f.Namespace, selector, tlsConfig != nil)
	if err != nil {
		f.T.Fatal(err)
	}
	c, err := etcdconn.New(f.Ctx, etcdconn.Options{Endpoints: eps, TLS: tlsConfig})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { _ = c.Close() })
	return c, eps
}

// RequireHashKVEqual compares every member's HashKV at one revision, waiting up to timeout for
// lagging members, and fails the test on a mismatch.
func (f *Test) RequireHashKVEqual(c *clientv3.Client, endpoints []string, timeout time.Duration) hashkv.Report {
	f.T.Helper()
	rep, err := hashkv.Compare(f.Ctx, c, endpoints, hashkv.Options{Timeout: timeout})
	if err != nil {
		f.T.Fatalf("comparing HashKV: %v", err)
	}
	if !rep.Equal() {
		f.T.Fatalf("HashKV differs: %s", rep)
	}
	return rep
}

// EndpointSetter is what FollowEndpoints updates; *traffic.Generator implements it.
type EndpointSetter interface {
	SetEndpoints(endpoints ...string) error
}

// followInterval is how often FollowEndpoints re-reads the member Pods.
const followInterval = time.Second

// FollowEndpoints keeps target's endpoints equal to the IPs of the Ready Pods matching selector
// in the test namespace, re-reading them every second, until the returned stop function is
// called or the test ends. Scenarios that replace or roll members run their traffic through it,
// because a recreated Pod comes back under a new IP.
func (f *Test) FollowEndpoints(target EndpointSetter, selector string, useTLS bool) (stop func()) {
	ctx, cancel := context.WithCancel(f.Ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(followInterval)
		defer ticker.Stop()
		last := ""
		for {
			if eps := f.readyEndpoints(ctx, selector, useTLS); len(eps) > 0 && strings.Join(eps, ",") != last {
				if err := target.SetEndpoints(eps...); err != nil {
					f.T.Logf("following etcd endpoints: %v", err)
				} else {
					last = strings.Join(eps, ",")
					f.T.Logf("etcd endpoints now %s", last)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	// Waiting for the goroutine before the test completes keeps its Logf calls legal.
	f.T.Cleanup(stop)
	return stop
}

// readyEndpoints returns the sorted client URLs of the Ready Pods matching selector; API
// errors yield nil, so the caller keeps the endpoints it has.
func (f *Test) readyEndpoints(ctx context.Context, selector string, useTLS bool) []string {
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil
	}
	var ready []corev1.Pod
	for _, p := range pods.Items {
		if PodReady(&p) && p.DeletionTimestamp == nil {
			ready = append(ready, p)
		}
	}
	eps, _ := etcdconn.PodEndpoints(ready, etcdconn.ClientPort, useTLS)
	sort.Strings(eps)
	return eps
}

// VerifyTraffic is the standard end of a scenario under load: it records the run's longest
// write gap as "write-gap-max" in the timing report, logs the summary, and fails the test
// unless the history is linearizable, no acknowledged write is missing and at least minAcked
// puts were acknowledged. On failure the history, a summary and porcupine's visualization go
// to the test's artifacts folder.
func (f *Test) VerifyTraffic(res *traffic.Result, minAcked int, note string) {
	f.T.Helper()
	f.Record("write-gap-max", res.WriteGap.Length, note)
	f.T.Log(res)
	lin, err := res.Verify(minAcked, f.ArtifactsDir)
	if err != nil {
		f.T.Fatalf("traffic check (%s over %d operations): %v; artifacts in %s", lin.Verdict, lin.Operations, err, f.ArtifactsDir)
	}
}
