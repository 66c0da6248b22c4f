package tunnel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/tunnel"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// TestPodConfigReachesARealEtcd runs a real etcd with the legacy full-TLS Pod's server
// certificate and client CA, as that Pod mounts them, and reaches it with the configuration
// PodConfig derives: the server verified as the Pod's advertised DNS name although the address
// is a loopback one, as through a port-forward, and the client certificate presented. Without
// that certificate etcd refuses the connection.
func TestPodConfigReachesARealEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	target, r, set := legacy(t, legacyfixture.Options{Variant: legacyfixture.TLS})
	dir := t.TempDir()
	files := map[string][]byte{}
	for _, s := range set.Secrets {
		for k, v := range s.Data {
			files[s.Name+"-"+k] = v
		}
	}
	path := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, files[name], 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ports, err := etcdproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	etcdproc.StartForTest(ctx, t, etcdproc.Options{ExtraArgs: []string{
		"--listen-client-urls=" + url, "--advertise-client-urls=" + url,
		"--cert-file=" + path("old-server-tls-tls.crt"), "--key-file=" + path("old-server-tls-tls.key"),
		"--trusted-ca-file=" + path("old-client-ca-ca.crt"), "--client-cert-auth",
	}})

	cfg, err := tunnel.PodConfig(ctx, r, target, tunnel.PodTLS{CASecret: "old-server-ca", ClientCertSecret: "old-client-tls"}, "") //nolint:gosec // G101: Secret names, not their content
	if err != nil {
		t.Fatal(err)
	}
	cfg.Endpoints = []string{url}
	if n := members(ctx, t, cfg); n != 1 {
		t.Fatalf("MemberList: %d members, want 1", n)
	}

	anonymous := cfg
	anonymous.TLS = cfg.TLS.Clone()
	anonymous.TLS.Certificates = nil
	anonymous.TLSDigest = "anonymous"
	if n := members(ctx, t, anonymous); n != -1 {
		t.Fatalf("etcd with --client-cert-auth answered a client without a certificate (%d members)", n)
	}
}

// members is the size of MemberList's answer, or -1 when the call fails.
func members(ctx context.Context, t *testing.T, cfg etcdclient.Config) int {
	t.Helper()
	conn, err := etcdclient.New(ctx, cfg)
	if err != nil {
		return -1
	}
	defer func() { _ = conn.Close() }()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ms, err := conn.MemberList(cctx)
	if err != nil {
		t.Logf("MemberList: %v", err)
		return -1
	}
	return len(ms)
}
