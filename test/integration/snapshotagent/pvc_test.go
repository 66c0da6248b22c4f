package snapshotagent_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// fill writes a keyspace that exercises the snapshot's bbolt layout: many small keys (several
// leaf pages), deletions, a compaction, values larger than a page (overflow pages), and a user
// and a role whose name looks like a revision key. With endOnDelete the newest revision is a
// tombstone. It returns the revision after the last write.
func fill(ctx context.Context, t *testing.T, cli *clientv3.Client, endOnDelete bool) int64 {
	t.Helper()
	for batch := range 5 {
		ops := make([]clientv3.Op, 0, 100)
		for i := range 100 {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("k%04d", batch*100+i), strings.Repeat("v", 100)))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if _, err := cli.Delete(ctx, fmt.Sprintf("k%04d", i*7)); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := cli.Put(ctx, "before-compaction", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision-20); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := cli.Put(ctx, fmt.Sprintf("large%d", i), strings.Repeat(fmt.Sprint(i), 300<<10)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.UserAdd(ctx, "operator_readonly", "pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.RoleAdd(ctx, "operator_readonly"); err != nil {
		t.Fatal(err)
	}
	if endOnDelete {
		del, err := cli.Delete(ctx, "k0001")
		if err != nil {
			t.Fatal(err)
		}
		return del.Header.Revision
	}
	put, err := cli.Put(ctx, "last", "x")
	if err != nil {
		t.Fatal(err)
	}
	return put.Header.Revision
}

// TestSnapshotToPVC snapshots a cluster of every supported minor into a folder standing for a
// PVC, then checks the artifact the way a restore does: its checksum and sidecars, etcdutl's
// view of it, and a cluster restored from it holding the same keys at the reported revision.
func TestSnapshotToPVC(t *testing.T) {
	t.Parallel()
	for _, minor := range minors {
		t.Run(minor, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			size := 1
			if minor == "3.6" {
				size = 3 // and one member down: the agent uses another
			}
			c := startCluster(ctx, t, minor, etcdproc.Options{Size: size})
			cli := client(t, c, "", "")
			wantRev := fill(ctx, t, cli, minor == "3.7")
			want, _ := keyspace(ctx, t, cli, 0)
			if size > 1 {
				if err := c.Members[1].Kill(); err != nil {
					t.Fatal(err)
				}
			}

			env := pvcEnv(c, t.TempDir(), "nightly", "uid-"+minor)
			code, res := agentrun.Snapshot(ctx, t, env)
			if code != 0 {
				t.Fatalf("agent failed: %+v", res)
			}
			path := artifactPath(env, "nightly")
			checkArtifact(t, path, res)
			if !strings.HasPrefix(res.EtcdVersion, minor+".") || res.Revision != wantRev ||
				res.URI != "pvc://"+claim+"/etcd/daily/nightly.db" {
				t.Errorf("result %+v; want etcd %s.x at revision %d", res, minor, wantRev)
			}
			if st := snapshotStatus(t, minor, path); st.Revision != res.Revision {
				t.Errorf("etcdutl snapshot status says revision %d, the agent %d", st.Revision, res.Revision)
			}
			restored := client(t, restore(ctx, t, minor, path), "", "")
			got, rev := keyspace(ctx, t, restored, 0)
			if !maps.Equal(got, want) || rev != res.Revision {
				t.Errorf("restored: %d keys at revision %d; want %d keys at %d", len(got), rev, len(want), res.Revision)
			}
		})
	}
}

// checkArtifact checks the artifact at path against the agent's result and its siblings.
func checkArtifact(t *testing.T, path string, res snapshot.Result) {
	t.Helper()
	sum := fileSHA256(t, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Checksum != snapshot.FormatChecksum(sum) || res.SizeBytes != fi.Size() {
		t.Errorf("result says %s, %d bytes; the file is %s, %d bytes", res.Checksum, res.SizeBytes, snapshot.FormatChecksum(sum), fi.Size())
	}
	sidecar, err := os.ReadFile(path + snapshot.ChecksumSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if checksum, name, err := snapshot.ParseChecksumFile(sidecar); err != nil || checksum != res.Checksum || name != fi.Name() {
		t.Errorf("sidecar %q: %s %s %v", sidecar, checksum, name, err)
	}
	version, err := os.ReadFile(path + snapshot.VersionSuffix)
	if err != nil || strings.TrimSpace(string(version)) != res.EtcdVersion {
		t.Errorf(".version = %q, %v; want %s", version, err, res.EtcdVersion)
	}
}

// TestOverwriteGuardOnPVC: a retry of the same snapshot replaces its artifact; another snapshot
// with the same name is refused with ArtifactExists and exit code 2, and the artifact stays.
func TestOverwriteGuardOnPVC(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, "3.6", etcdproc.Options{})
	cli := client(t, c, "", "")
	dir := t.TempDir()
	if _, err := cli.Put(ctx, "a", "1"); err != nil {
		t.Fatal(err)
	}
	first := pvcEnv(c, dir, "nightly", "uid-first")
	if code, res := agentrun.Snapshot(ctx, t, first); code != 0 {
		t.Fatalf("first snapshot: %+v", res)
	}
	if _, err := cli.Put(ctx, "b", "2"); err != nil {
		t.Fatal(err)
	}
	code, retried := agentrun.Snapshot(ctx, t, pvcEnv(c, dir, "nightly", "uid-first"))
	if code != 0 {
		t.Fatalf("retry of the same snapshot: %+v", retried)
	}
	checkArtifact(t, artifactPath(first, "nightly"), retried)

	code, res := agentrun.Snapshot(ctx, t, pvcEnv(c, dir, "nightly", "uid-second"))
	if code != snapshot.ExitPermanent || res.Reason != snapshot.ReasonArtifactExists || !strings.Contains(res.Message, "uid-first") {
		t.Errorf("another snapshot: exit %d, %+v; want ArtifactExists naming uid-first", code, res)
	}
	checkArtifact(t, artifactPath(first, "nightly"), retried)
}
