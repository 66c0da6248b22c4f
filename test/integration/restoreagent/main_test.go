// Package restoreagent_test runs the restore agent (internal/restoreagent) with real etcd
// processes and the real etcdutl of every supported minor (test/utils/etcdproc): snapshots are
// taken by the snapshot agent (with its sidecars) or by `etcdctl snapshot save` (with none),
// restored into a fresh data dir from a folder standing in for a PVC or from a real S3 server
// (test/utils/s3server), and an etcd started on the result is compared key by key, and by
// revision, with the source at the snapshot's revision.
package restoreagent_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/guard"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

const (
	// testTimeout bounds each test, cluster starts included.
	testTimeout = 3 * time.Minute
	// claim is the PVC name the tests pretend to have mounted.
	claim = "backups"
	// token is the restored cluster's --initial-cluster-token.
	token = "tenant-restored-7c1e"
)

func TestMain(m *testing.M) {
	if err := etcdproc.CheckBinDirs(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// source is a running one-member cluster holding a known keyspace.
type source struct {
	c     *etcdproc.Cluster
	cli   *clientv3.Client
	minor string
}

// startSource starts etcd of minor with keys written, some overwritten and some deleted, so
// that a restored keyspace differs from a fresh one in every way that matters.
func startSource(ctx context.Context, t *testing.T, minor string) *source {
	t.Helper()
	dir, _ := etcdproc.RequireRelease(t, minor)
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Binary: filepath.Join(dir, "etcd")})
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	for i := range 200 {
		if _, err := cli.Put(ctx, fmt.Sprintf("key/%03d", i), fmt.Sprintf("value-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if _, err := cli.Put(ctx, fmt.Sprintf("key/%03d", i), "overwritten"); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Delete(ctx, fmt.Sprintf("key/%03d", 100+i)); err != nil {
			t.Fatal(err)
		}
	}
	return &source{c: c, cli: cli, minor: minor}
}

// writeAfter writes keys the snapshot must not hold.
func (s *source) writeAfter(ctx context.Context, t *testing.T) {
	t.Helper()
	for i := range 10 {
		if _, err := s.cli.Put(ctx, fmt.Sprintf("after/%d", i), "later"); err != nil {
			t.Fatal(err)
		}
	}
}

// takeSnapshot runs the snapshot agent with env; it must succeed.
func takeSnapshot(ctx context.Context, t *testing.T, env map[string]string) snapshot.Result {
	t.Helper()
	code, res := agentrun.Snapshot(ctx, t, env)
	if code != 0 {
		t.Fatalf("snapshot agent exited %d: %s", code, res.Message)
	}
	return res
}

// snapshotToPVC takes a snapshot with the snapshot agent into folder dir (a claim's root)
// under etcd/, and returns the agent's result.
func (s *source) snapshotToPVC(ctx context.Context, t *testing.T, dir, name string) snapshot.Result {
	t.Helper()
	return takeSnapshot(ctx, t, map[string]string{
		snapshot.EnvEndpoints:    strings.Join(s.c.Endpoints(), ","),
		snapshot.EnvSnapshotName: name,
		snapshot.EnvSnapshotUID:  "uid-" + name,
		snapshot.EnvDestination:  snapshot.DestinationPVC,
		snapshot.EnvPVCDir:       dir,
		snapshot.EnvPVCClaim:     claim,
		snapshot.EnvPVCSubPath:   "etcd",
	})
}

// target is an etcd member, not started, whose data dir the restore fills.
type target struct {
	c       *etcdproc.Cluster
	m       *etcdproc.Member
	version string
	etcdutl string
}

func newTarget(t *testing.T, minor string) *target {
	t.Helper()
	dir, v := etcdproc.RequireRelease(t, minor)
	c, err := etcdproc.NewCluster(etcdproc.Options{Binary: filepath.Join(dir, "etcd"), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	m := c.Members[0]
	// The data volume's mount point exists before the init container runs.
	if err := os.MkdirAll(m.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &target{c: c, m: m, version: v, etcdutl: filepath.Join(dir, "etcdutl")}
}

// env is the restore container's environment for this target, without a source.
func (tg *target) env() map[string]string {
	return map[string]string{
		restore.EnvDataDir:        tg.m.DataDir,
		restore.EnvName:           tg.m.Name,
		restore.EnvInitialCluster: membership.SeedInitialCluster(tg.m.Name, tg.m.PeerURL),
		restore.EnvClusterToken:   token,
		restore.EnvPeerURL:        tg.m.PeerURL,
		restore.EnvEtcdVersion:    tg.version,
		restore.EnvEtcdutl:        tg.etcdutl,
	}
}

// pvcEnv restores etcd/<name>.db from the claim folder dir.
func (tg *target) pvcEnv(dir, name string) map[string]string {
	env := tg.env()
	env[restore.EnvSource] = restore.SourcePVC
	env[restore.EnvPVCDir] = dir
	env[restore.EnvPVCClaim] = claim
	env[restore.EnvPVCPath] = "etcd/" + snapshot.ArtifactFileName(name)
	return env
}

// noMember fails when the target's data dir holds member/ or anything but what was there.
func (tg *target) noMember(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(tg.m.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the data dir holds %s after a refused restore", e.Name())
	}
}

// start starts etcd on the restored data dir, and checks that the restored cluster is a new
// one: a new cluster ID, the one the operator derives from the seed's member ID. Before etcd
// starts, the data-dir guard must see data: its first start in the seed's Pod records it, so that
// a restored seed whose data later vanishes is refused like any member's.
func (tg *target) start(ctx context.Context, t *testing.T, src *source) *clientv3.Client {
	t.Helper()
	if has, err := guard.HasData(tg.m.DataDir); err != nil || !has {
		t.Errorf("the guard sees no data in the restored data dir: %v", err)
	}
	if err := guard.Check(tg.m.DataDir, filepath.Join(t.TempDir(), "marker"), false); err != nil {
		t.Errorf("the guard refuses the restored data dir: %v", err)
	}
	if err := tg.m.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tg.m.WaitHealthy(ctx); err != nil {
		t.Fatalf("etcd on the restored data: %v\n%s", err, tg.m.LogTail(20))
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: tg.c.Endpoints(), DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old, err := src.cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := etcdclient.FormatID(list.Header.ClusterId)
	if len(list.Members) != 1 || list.Members[0].Name != tg.m.Name || list.Members[0].PeerURLs[0] != tg.m.PeerURL {
		t.Errorf("restored membership %v, want only %s at %s", list.Members, tg.m.Name, tg.m.PeerURL)
	} else if want := membership.SeedClusterID(list.Members[0].ID); got != want {
		t.Errorf("restored cluster ID %s, want %s (derived from the seed's member ID)", got, want)
	}
	if got == etcdclient.FormatID(old.Header.ClusterId) {
		t.Errorf("the restored cluster kept the source's cluster ID %s", got)
	}
	return cli
}

// sameKeyspace compares every key and value of the restored cluster with the source's at the
// snapshot's revision, and the restored revision with the snapshot's.
func sameKeyspace(ctx context.Context, t *testing.T, src *source, restored *clientv3.Client, rev int64) {
	t.Helper()
	want, err := src.cli.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		t.Fatal(err)
	}
	got, err := restored.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.Revision != rev {
		t.Errorf("restored revision %d, want the snapshot's %d", got.Header.Revision, rev)
	}
	if len(got.Kvs) != len(want.Kvs) || len(got.Kvs) == 0 {
		t.Fatalf("restored %d keys, the source had %d at revision %d", len(got.Kvs), len(want.Kvs), rev)
	}
	for i := range want.Kvs {
		w, g := want.Kvs[i], got.Kvs[i]
		if string(w.Key) != string(g.Key) || string(w.Value) != string(g.Value) || w.ModRevision != g.ModRevision || w.Version != g.Version {
			t.Errorf("key %d: restored %s=%s (mod %d, version %d), source %s=%s (mod %d, version %d)",
				i, g.Key, g.Value, g.ModRevision, g.Version, w.Key, w.Value, w.ModRevision, w.Version)
		}
	}
}

// etcdctlSnapshot saves a snapshot with etcdctl, as a person would by hand: no sidecar, no
// recorded version.
func etcdctlSnapshot(ctx context.Context, t *testing.T, src *source, file string) {
	t.Helper()
	dir, _ := etcdproc.RequireRelease(t, src.minor)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "etcdctl"), "--endpoints="+src.c.Endpoints()[0], "snapshot", "save", file)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("etcdctl snapshot save: %v\n%s", err, out)
	}
}
