package restoreagent_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// TestRestoreFromPVC restores a snapshot the snapshot agent stored on a claim, for every
// supported minor and from an older minor into a newer one: the restored etcd holds exactly the
// source's keyspace at the snapshot's revision, under a new cluster ID, and a second run of the
// agent (a recreated Pod) leaves it alone.
func TestRestoreFromPVC(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ from, to string }{{"3.5", "3.5"}, {"3.6", "3.6"}, {"3.7", "3.7"}, {"3.5", "3.6"}} {
		t.Run(c.from+"-to-"+c.to, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			src := startSource(ctx, t, c.from)
			backups := t.TempDir()
			snap := src.snapshotToPVC(ctx, t, backups, "nightly")
			src.writeAfter(ctx, t)

			tg := newTarget(t, c.to)
			code, res := agentrun.Restore(ctx, t, tg.pvcEnv(backups, "nightly"))
			want := restore.Result{Outcome: restore.OutcomeRestored, URI: "pvc://backups/etcd/nightly.db", SizeBytes: snap.SizeBytes,
				Checksum: snap.Checksum, Verification: restore.VerifiedBySidecar, SnapshotVersion: snap.EtcdVersion}
			if code != 0 || res != want {
				t.Fatalf("restore: exit %d, %+v; want %+v", code, res, want)
			}
			if code, again := agentrun.Restore(ctx, t, tg.pvcEnv(backups, "nightly")); code != 0 || again.Outcome != restore.OutcomeAlreadyRestored {
				t.Errorf("second run: exit %d, %+v", code, again)
			}
			sameKeyspace(ctx, t, src, tg.start(ctx, t, src), snap.Revision)
		})
	}
}

// TestRestoreRefusesTamperedArtifact flips one byte of an artifact: checked against its sidecar
// or against the spec's checksum, the restore fails with ChecksumMismatch, exits permanently and
// leaves the data dir empty. The spec's checksum wins over a sidecar that disagrees with it.
func TestRestoreRefusesTamperedArtifact(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	src := startSource(ctx, t, "3.6")
	backups := t.TempDir()
	snap := src.snapshotToPVC(ctx, t, backups, "nightly")
	file := filepath.Join(backups, "etcd", "nightly.db")
	flipByte(t, file, 4096+17)

	for name, checksum := range map[string]string{"against the sidecar": "", "against the spec": snap.Checksum} {
		tg := newTarget(t, "3.6")
		env := tg.pvcEnv(backups, "nightly")
		if checksum != "" {
			env[restore.EnvChecksum] = checksum
		}
		code, res := agentrun.Restore(ctx, t, env)
		if code != snapshot.ExitPermanent || res.Reason != restore.ReasonChecksumMismatch {
			t.Errorf("%s: exit %d, %+v; want ChecksumMismatch", name, code, res)
		}
		tg.noMember(t)
	}

	// Restore the byte, and break the sidecar instead: the spec's checksum is what counts.
	flipByte(t, file, 4096+17)
	if err := os.WriteFile(file+snapshot.ChecksumSuffix, []byte(snap.Checksum[len(snapshot.ChecksumPrefix)+1:]+"0  nightly.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := newTarget(t, "3.6")
	env := tg.pvcEnv(backups, "nightly")
	env[restore.EnvChecksum] = snap.Checksum
	if code, res := agentrun.Restore(ctx, t, env); code != 0 || res.Verification != restore.VerifiedBySpec {
		t.Fatalf("with the spec's checksum and a wrong sidecar: exit %d, %+v", code, res)
	}
	sameKeyspace(ctx, t, src, tg.start(ctx, t, src), snap.Revision)
}

func flipByte(t *testing.T, file string, at int64) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreRefusesNewerMinor: a 3.6 snapshot (its .version sibling says so) is not restored
// by a 3.5 target, before anything is downloaded.
func TestRestoreRefusesNewerMinor(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	src := startSource(ctx, t, "3.6")
	backups := t.TempDir()
	snap := src.snapshotToPVC(ctx, t, backups, "nightly")
	tg := newTarget(t, "3.5")
	code, res := agentrun.Restore(ctx, t, tg.pvcEnv(backups, "nightly"))
	if code != snapshot.ExitPermanent || res.Reason != restore.ReasonVersionTooNew || res.SnapshotVersion != snap.EtcdVersion || res.Checksum != "" {
		t.Errorf("3.6 snapshot into 3.5: exit %d, %+v; want VersionTooNew before the download", code, res)
	}
	tg.noMember(t)
}

// TestRestoreUnverifiedSnapshot restores a snapshot saved by hand with etcdctl, which has no
// sidecar and records no version: it is restored, and the result says it was not verified
// (etcdutl's integrity hash still is). A bare database file, without that hash, is refused by
// etcdutl.
func TestRestoreUnverifiedSnapshot(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	src := startSource(ctx, t, "3.6")
	backups := t.TempDir()
	file := filepath.Join(backups, "etcd", "by-hand.db")
	etcdctlSnapshot(ctx, t, src, file)
	rev := snapshotRevision(t, file)
	src.writeAfter(ctx, t)

	tg := newTarget(t, "3.6")
	code, res := agentrun.Restore(ctx, t, tg.pvcEnv(backups, "by-hand"))
	if code != 0 || res.Verification != restore.Unverified || res.SnapshotVersion != "" || res.Checksum == "" {
		t.Fatalf("etcdctl snapshot: exit %d, %+v; want restored, unverified", code, res)
	}
	sameKeyspace(ctx, t, src, tg.start(ctx, t, src), rev)

	// etcd's own database file, copied out of the restored data dir: no integrity hash.
	db, err := os.ReadFile(filepath.Join(tg.m.DataDir, "member", "snap", "db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(backups, "etcd", "raw.db"), db, 0o600); err != nil {
		t.Fatal(err)
	}
	raw := newTarget(t, "3.6")
	if code, res := agentrun.Restore(ctx, t, raw.pvcEnv(backups, "raw")); code != snapshot.ExitPermanent || res.Reason != restore.ReasonEtcdutlFailed {
		t.Errorf("a database without its hash: exit %d, %+v; want EtcdutlFailed", code, res)
	}
	raw.noMember(t)

	missing := newTarget(t, "3.6")
	if code, res := agentrun.Restore(ctx, t, missing.pvcEnv(backups, "nothing-here")); code != snapshot.ExitPermanent || res.Reason != restore.ReasonArtifactNotFound {
		t.Errorf("a missing file: exit %d, %+v; want ArtifactNotFound", code, res)
	}
}

// snapshotRevision is the revision `etcdutl snapshot status` reads from a snapshot file.
func snapshotRevision(t *testing.T, file string) int64 {
	t.Helper()
	dir, _ := etcdproc.RequireRelease(t, "3.6")
	out, err := exec.Command(filepath.Join(dir, "etcdutl"), "snapshot", "status", file, "-w", "json").Output()
	if err != nil {
		t.Fatalf("etcdutl snapshot status: %v", err)
	}
	var st struct {
		Revision int64 `json:"revision"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	return st.Revision
}
