//go:build e2e

package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
	"github.com/etcd-operator/etcd-operator/test/utils/hashkv"
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
