// Package snapshotagent_test runs the snapshot agent (internal/snapshotagent) against real etcd
// processes of every supported minor (test/utils/etcdproc) and checks its artifacts with the
// tools a restore uses: `etcdutl snapshot status`, `etcdutl snapshot restore` and an etcd
// started from the restored data.
package snapshotagent_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

const (
	// testTimeout bounds each test, cluster starts included.
	testTimeout = 3 * time.Minute
	// claim is the PVC name the tests pretend to have mounted.
	claim = "backups"
)

// minors are the etcd minors the agent must snapshot.
var minors = []string{"3.5", "3.6", "3.7"}

func TestMain(m *testing.M) {
	if err := etcdproc.CheckBinDirs(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

func startCluster(ctx context.Context, t *testing.T, minor string, opts etcdproc.Options) *etcdproc.Cluster {
	t.Helper()
	dir, _ := etcdproc.RequireRelease(t, minor)
	opts.Binary = filepath.Join(dir, "etcd")
	return etcdproc.StartForTest(ctx, t, opts)
}

// client dials c with clientv3 directly: the test's own view of etcd, independent of the agent.
func client(t *testing.T, c *etcdproc.Cluster, user, password string) *clientv3.Client {
	t.Helper()
	cfg := clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second, Username: user, Password: password}
	if c.PKI != nil {
		tlsCfg, err := c.PKI.ClientTLS()
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLS = tlsCfg
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// pvcEnv is the environment of a snapshot of c into a PVC mounted at dir.
func pvcEnv(c *etcdproc.Cluster, dir, name, uid string) map[string]string {
	return map[string]string{
		snapshot.EnvEndpoints:    strings.Join(c.Endpoints(), ","),
		snapshot.EnvSnapshotName: name,
		snapshot.EnvSnapshotUID:  uid,
		snapshot.EnvDestination:  snapshot.DestinationPVC,
		snapshot.EnvPVCDir:       dir,
		snapshot.EnvPVCClaim:     claim,
		snapshot.EnvPVCSubPath:   "etcd/daily",
	}
}

// artifactPath is where the agent writes snapshot name under env's PVC folder.
func artifactPath(env map[string]string, name string) string {
	return filepath.Join(env[snapshot.EnvPVCDir], env[snapshot.EnvPVCSubPath], snapshot.ArtifactFileName(name))
}

// utlStatus is `etcdutl snapshot status -w json`.
type utlStatus struct {
	Revision int64 `json:"revision"`
	TotalKey int   `json:"totalKey"`
}

func snapshotStatus(t *testing.T, minor, file string) utlStatus {
	t.Helper()
	dir, _ := etcdproc.RequireRelease(t, minor)
	out, err := exec.Command(filepath.Join(dir, "etcdutl"), "snapshot", "status", file, "-w", "json").Output()
	if err != nil {
		t.Fatalf("etcdutl snapshot status %s: %v", file, err)
	}
	var st utlStatus
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("etcdutl snapshot status output %s: %v", out, err)
	}
	return st
}

// restore restores file with etcdutl of minor (with its integrity-hash check) and starts a
// one-member etcd of the same minor on the result.
func restore(ctx context.Context, t *testing.T, minor, file string) *etcdproc.Cluster {
	t.Helper()
	dir, _ := etcdproc.RequireRelease(t, minor)
	c, err := etcdproc.NewCluster(etcdproc.Options{Binary: filepath.Join(dir, "etcd"), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m := c.Members[0]
	out, err := exec.Command(filepath.Join(dir, "etcdutl"), "snapshot", "restore", file,
		"--name", m.Name, "--initial-cluster", m.Name+"="+m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
		"--data-dir", m.DataDir).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("etcd on the restored data: %v\n%s", err, m.LogTail(20))
	}
	return c
}

// keyspace reads every key and value of cli, at revision rev (0: the latest), and the revision
// the read saw.
func keyspace(ctx context.Context, t *testing.T, cli *clientv3.Client, rev int64) (map[string]string, int64) {
	t.Helper()
	resp, err := cli.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		t.Fatalf("reading the keyspace at revision %d: %v", rev, err)
	}
	kv := make(map[string]string, len(resp.Kvs))
	for _, e := range resp.Kvs {
		kv[string(e.Key)] = string(e.Value)
	}
	return kv, resp.Header.Revision
}

func fileSHA256(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}
