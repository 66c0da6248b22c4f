package restoreagent

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// downloadMode is the mode of the downloaded artifact: it holds every key of the cluster.
const downloadMode fs.FileMode = 0o600

// holdsMember reports whether dataDir holds member/, which etcd treats as a data dir of its
// own: the agent never writes over it. A missing data dir is an error: the volume is mounted
// there, so it must exist.
func holdsMember(dataDir string) (bool, error) {
	if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() {
		return false, snapshot.Failf(snapshot.ReasonInvalidConfig, "%s=%s is not a folder: %v", restore.EnvDataDir, dataDir, err)
	}
	_, err := os.Lstat(filepath.Join(dataDir, "member"))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, agentio.FSFailure("looking for member/ in the data dir", err)
}

// removeStaging removes what an interrupted earlier run left: the staging folder and the
// download. etcdutl refuses to restore into a folder that exists.
func removeStaging(dataDir string) error {
	for _, p := range []string{restore.StagingDir(dataDir), restore.DownloadFile(dataDir)} {
		if err := os.RemoveAll(p); err != nil {
			return agentio.FSFailure("removing "+p+" left by an earlier run", err)
		}
	}
	return nil
}

// removeAfter removes paths after a failure, so that a failed restore leaves the data dir as it
// found it, and returns err.
func removeAfter(err error, paths ...string) error {
	for _, p := range paths {
		_ = os.RemoveAll(p) // the next run removes it too (removeStaging)
	}
	return err
}

// fetch copies the artifact into file, hashing it as it is written, syncs it and returns its
// SHA-256. A copy of another length than size is refused: the artifact changed under the
// restore, or the transfer was cut short.
func fetch(ctx context.Context, src source, file string, size int64) (sum string, err error) {
	body, err := src.Open(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = body.Close() }()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, downloadMode) //nolint:gosec // G304: a fixed name in the data dir
	if err != nil {
		return "", agentio.FSFailure("creating the download", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(file)
		}
	}()
	w := agentio.NewDropBehind(f)
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), body)
	if err != nil {
		if _, classified := errors.AsType[*snapshot.Failure](err); classified {
			return "", err
		}
		return "", agentio.FSFailure("downloading the snapshot", err)
	}
	if n != size {
		return "", snapshot.Failf(snapshot.ReasonStoreFailed, "read %d bytes of a snapshot of %d bytes: it changed during the restore, or the transfer was cut short", n, size)
	}
	if err := f.Sync(); err != nil {
		return "", agentio.FSFailure("syncing the download", err)
	}
	w.Release()
	if err := f.Close(); err != nil {
		return "", agentio.FSFailure("closing the download", err)
	}
	return snapshot.ChecksumPrefix + fmt.Sprintf("%x", h.Sum(nil)), nil
}

// moveIntoPlace makes the restored member/ durable, then renames it into the data dir. etcdutl
// writes files without syncing all of them, and a rename is only as durable as what it points
// to: after a crash, the data dir holds either no member/ (the next run restores again) or a
// complete one.
func moveIntoPlace(staging, dataDir string) error {
	restored := filepath.Join(staging, "member")
	if err := syncTree(restored); err != nil {
		return err
	}
	if err := os.Rename(restored, filepath.Join(dataDir, "member")); err != nil {
		return agentio.FSFailure("moving the restored member/ into place", err)
	}
	if err := syncDir(dataDir); err != nil {
		return err
	}
	if err := removeStaging(dataDir); err != nil {
		return err
	}
	return syncDir(dataDir)
}

// syncTree fsyncs every file and folder under root.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return agentio.FSFailure("reading the restored data", err)
		}
		return syncPath(p)
	})
}

func syncDir(dir string) error { return syncPath(dir) }

func syncPath(p string) error {
	f, err := os.Open(p) //nolint:gosec // G304: a path under the data dir
	if err != nil {
		return agentio.FSFailure("opening "+p+" to sync it", err)
	}
	defer func() { _ = f.Close() }()
	if err := f.Sync(); err != nil {
		return agentio.FSFailure("syncing "+p, err)
	}
	return nil
}
