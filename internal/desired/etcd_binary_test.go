package desired

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/utils/testpki"

	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// envEtcdBinDirs names folders holding real etcd releases, one per minor, separated by the
// path-list separator: the output of `go run ./hack/binaries etcd`.
const envEtcdBinDirs = "ETCD_BIN_DIRS"

// etcdStartTimeout bounds how long a real etcd may take to become ready.
const etcdStartTimeout = 60 * time.Second

// TestRenderedFlagsStartRealEtcd starts every etcd release named in ETCD_BIN_DIRS with the
// command line EtcdFlags renders, and requires it to become ready on the metrics port through
// the probe paths the Pod uses. Only the addresses are rewritten to loopback ports and the paths
// to temporary folders; every other flag goes to etcd exactly as rendered, so a misspelt or
// removed flag in any minor fails here.
func TestRenderedFlagsStartRealEtcd(t *testing.T) {
	t.Parallel()
	dirs := filepath.SplitList(os.Getenv(envEtcdBinDirs))
	if len(dirs) == 0 {
		t.Skipf("%s is not set; run with %s=\"$(go run ./hack/binaries etcd | paste -sd:)\"", envEtcdBinDirs, envEtcdBinDirs)
	}
	pki := newTestPKI(t)
	variants := map[string]*etcdv1alpha2.EtcdMemberTLS{
		"plaintext":     nil,
		"peer-auto-tls": {PeerAutoTLS: true},
		"client-mtls+peer-tls": {
			ClientServerSecretRef: ref("server"), ClientMTLS: true, PeerSecretRef: ref("peer"),
		},
	}
	for _, dir := range dirs {
		bin := filepath.Join(dir, "etcd")
		version := etcdBinaryVersion(t, bin)
		for name, tls := range variants {
			t.Run(version+"/"+name, func(t *testing.T) {
				t.Parallel()
				m := newMember(func(m *etcdv1alpha2.EtcdMember) {
					m.Spec.Version = version
					m.Spec.TLS = tls
					m.Spec.Options = &etcdv1alpha2.EtcdOptions{
						QuotaBackendBytes:       ptr.To[int64](64 << 20),
						AutoCompactionMode:      etcdv1alpha2.AutoCompactionPeriodic,
						AutoCompactionRetention: "5m",
						SnapshotCount:           ptr.To[int64](10000),
					}
					m.Annotations = map[string]string{etcdv1alpha2.AnnotationDataDirSubPath: "default.etcd"}
				})
				flags := EtcdFlags(MemberFlagInputs(m, ClusterStateNew))
				args, metricsURL := localise(t, flags, t.TempDir(), pki)
				log := runEtcd(t, bin, args, metricsURL)
				checkEffectiveConfig(t, version, log)
				if strings.Contains(strings.ToLower(log), "deprecated") {
					t.Errorf("etcd %s warned about a deprecated flag:\n%s", version, grepLines(log, "deprecated"))
				}
			})
		}
	}
}

// checkEffectiveConfig reads the configuration etcd logs as it starts ("starting an etcd
// server") and checks that the rendered options and corruption checks took effect, not merely
// that etcd accepted the flags.
func checkEffectiveConfig(t *testing.T, version, log string) {
	t.Helper()
	var cfg map[string]any
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"msg":"starting an etcd server"`) {
			if err := json.Unmarshal([]byte(line), &cfg); err != nil {
				t.Fatalf("decoding etcd's start-up line: %v\n%s", err, line)
			}
			break
		}
	}
	if cfg == nil {
		t.Fatalf("etcd %s logged no start-up configuration:\n%s", version, log)
	}
	want := map[string]any{
		"quota-backend-bytes":  float64(64 << 20),
		"snapshot-count":       float64(10000),
		"auto-compaction-mode": "periodic",
	}
	if v, _ := parseVersion(version); v.atLeast(v3_6_0) {
		gates, _ := cfg["feature-gates"].(string)
		for _, g := range []string{"InitialCorruptCheck=true", "CompactHashCheck=true"} {
			if !strings.Contains(gates, g) {
				t.Errorf("etcd %s runs with feature-gates %q, want %s", version, gates, g)
			}
		}
	} else {
		want["initial-corrupt-check"] = true
		want["compact-check-time-enabled"] = true
	}
	for k, w := range want {
		if got := cfg[k]; got != w {
			t.Errorf("etcd %s runs with %s=%v, want %v", version, k, got, w)
		}
	}
}

// etcdBinaryVersion reads "etcd Version: X.Y.Z" from `etcd --version`.
func etcdBinaryVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, "--version").Output()
	if err != nil {
		t.Fatalf("running %s --version: %v", bin, err)
	}
	m := regexp.MustCompile(`etcd Version: (\d+\.\d+\.\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s --version printed no version:\n%s", bin, out)
	}
	return string(m[1])
}

// localise rewrites the rendered flags for a process on this machine: listeners and advertised
// URLs move to free loopback ports, the data directory and TLS files to temporary folders.
// Anything else must pass through untouched.
func localise(t *testing.T, flags []string, tmp string, pki testPKI) ([]string, string) {
	t.Helper()
	peer, client, metrics := freePort(t), freePort(t), freePort(t)
	peerScheme := "http"
	var args []string
	for _, f := range flags {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if name == "listen-peer-urls" {
			peerScheme = scheme(value)
		}
		switch name {
		case "data-dir":
			value = filepath.Join(tmp, strings.TrimPrefix(value, DataMountPath))
		case "listen-peer-urls", "initial-advertise-peer-urls":
			value = fmt.Sprintf("%s://127.0.0.1:%d", scheme(value), peer)
		case "listen-client-urls", "advertise-client-urls":
			value = fmt.Sprintf("%s://127.0.0.1:%d", scheme(value), client)
		case "listen-metrics-urls":
			value = fmt.Sprintf("http://127.0.0.1:%d", metrics)
		case "cert-file", "peer-cert-file":
			value = pki.cert
		case "key-file", "peer-key-file":
			value = pki.key
		case "trusted-ca-file", "peer-trusted-ca-file":
			value = pki.ca
		}
		args = append(args, "--"+name+"="+value)
	}
	for i, a := range args {
		if strings.HasPrefix(a, "--initial-cluster=") {
			args[i] = fmt.Sprintf("--initial-cluster=%s=%s://127.0.0.1:%d", testMemberName, peerScheme, peer)
		}
	}
	return args, fmt.Sprintf("http://127.0.0.1:%d", metrics)
}

func scheme(url string) string {
	s, _, _ := strings.Cut(url, "://")
	return s
}

// runEtcd starts etcd, waits until its probe endpoints answer 200, stops it and returns its log.
func runEtcd(t *testing.T, bin string, args []string, metricsURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), etcdStartTimeout)
	defer cancel()
	var log lockedBuffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.Env = []string{} // no ETCD_* variables from the test environment
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done //nolint:errcheck // killed on purpose: the exit status says nothing
	}()

	paths := []string{"/livez", "/readyz"}
	if v, _ := parseVersion(etcdBinaryVersion(t, bin)); !v.atLeast(v3_5_11) {
		paths = []string{"/health"}
	}
	httpClient := &http.Client{Timeout: 2 * time.Second}
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		ok := true
		for _, p := range paths {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL+p, nil)
			resp, err := httpClient.Do(req)
			if err != nil {
				ok = false
				break
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				ok = false
			}
		}
		if ok {
			return log.String()
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("etcd exited (%v) with flags %q:\n%s", err, args, log.String())
		case <-ctx.Done():
			t.Fatalf("etcd not ready on %s%v within %s with flags %q:\n%s", metricsURL, paths, etcdStartTimeout, args, log.String())
		case <-ticker.C:
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(strings.ToLower(l), substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// lockedBuffer is a bytes.Buffer safe for etcd's stdout and stderr writers and the test reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testPKI is a CA and one certificate for 127.0.0.1 with both server and client usage, used as
// client server, peer and client certificate alike.
type testPKI struct {
	ca, cert, key string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := testpki.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(testpki.Leaf{CommonName: "member", DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Usages: testpki.Both})
	if err != nil {
		t.Fatal(err)
	}
	p := testPKI{ca: filepath.Join(dir, tlsCAKey), cert: filepath.Join(dir, tlsCertKey), key: filepath.Join(dir, tlsKeyKey)}
	for path, data := range map[string][]byte{p.ca: ca.CertPEM, p.cert: leaf.CertPEM, p.key: leaf.KeyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
