package snapshotagent

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// Permissions of what the agent creates on the PVC. A snapshot holds every key of the cluster,
// Secrets of a Kubernetes control plane among them: nothing is world-readable. The group may
// read, so that a restore Pod sharing the volume's fsGroup can.
const (
	pvcDirMode  fs.FileMode = 0o750
	pvcFileMode fs.FileMode = 0o640
)

// pvcDestination writes <root>/<subPath>/<name>.db and its siblings .uid, .version,
// .sha256 and, for a schedule's snapshot, .schedule (docs/backup-restore.md, "On a PVC").
type pvcDestination struct {
	root, folder, name, uri, uid string
	// scheduleUID is the UID of the schedule the snapshot belongs to; empty for a one-off.
	scheduleUID string

	// freeBytes reports the space available in a folder; statfs unless a test replaces it.
	freeBytes func(dir string) (int64, error)
	// wrapWriter, when set, wraps the temporary artifact file's writer; tests use it to fail
	// writes as a full disk does.
	wrapWriter func(io.Writer) io.Writer
}

func newPVCDestination(cfg snapshot.PVCConfig, snapshotName, uid, scheduleUID string) *pvcDestination {
	return &pvcDestination{
		root:        cfg.Dir,
		folder:      filepath.Join(cfg.Dir, filepath.FromSlash(cfg.SubPath)),
		name:        snapshot.ArtifactFileName(snapshotName),
		uri:         snapshot.PVCURI(cfg.Claim, cfg.SubPath, snapshotName),
		uid:         uid,
		scheduleUID: scheduleUID,
		freeBytes:   agentio.FreeBytes,
	}
}

// URI implements destination.
func (d *pvcDestination) URI() string { return d.uri }

func (d *pvcDestination) path(suffix string) string {
	return filepath.Join(d.folder, d.name+suffix)
}

// tempPattern names temporary files: hidden, and tied to the artifact's name so that a later
// attempt can remove what a killed one left.
func (d *pvcDestination) tempPattern(suffix string) string {
	return "." + d.name + suffix + ".*.tmp"
}

// Prepare implements destination: the claim must be mounted, the folder is created, temporary
// files of earlier attempts are removed, and the overwrite guard reads the .uid sibling.
func (d *pvcDestination) Prepare(_ context.Context) error {
	if fi, err := os.Stat(d.root); err != nil || !fi.IsDir() {
		return snapshot.Failf(snapshot.ReasonInvalidConfig, "%s=%s is not a mounted folder", snapshot.EnvPVCDir, d.root)
	}
	if err := os.MkdirAll(d.folder, pvcDirMode); err != nil {
		return agentio.FSFailure("creating the snapshot folder", err)
	}
	if err := d.removeStaleTemps(); err != nil {
		return err
	}
	existing, err := d.existing()
	if err != nil {
		return err
	}
	return snapshot.CheckOverwrite(existing, d.uid)
}

// existing describes the artifact already at the destination, if any.
func (d *pvcDestination) existing() (snapshot.Existing, error) {
	if _, err := os.Lstat(d.path("")); errors.Is(err, fs.ErrNotExist) {
		return snapshot.Existing{}, nil
	} else if err != nil {
		return snapshot.Existing{}, agentio.FSFailure("checking for an existing artifact", err)
	}
	uid, err := os.ReadFile(d.path(snapshot.UIDSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return snapshot.Existing{Present: true}, nil
	}
	if err != nil {
		return snapshot.Existing{}, agentio.FSFailure("reading the existing artifact's UID", err)
	}
	return snapshot.Existing{Present: true, UID: strings.TrimSpace(string(uid))}, nil
}

func (d *pvcDestination) removeStaleTemps() error {
	for _, suffix := range append([]string{""}, snapshot.SiblingSuffixes...) {
		stale, err := filepath.Glob(filepath.Join(d.folder, d.tempPattern(suffix)))
		if err != nil {
			return snapshot.Fail(snapshot.ReasonFailed, err)
		}
		for _, f := range stale {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return agentio.FSFailure("removing a temporary file of an earlier attempt", err)
			}
		}
	}
	return nil
}

// Store implements destination. The .uid and .schedule siblings are written before the
// artifact is renamed into place, so that an artifact this snapshot wrote always records its
// UID and its schedule's: an attempt killed between the two steps leaves an artifact its own
// retry may replace, never one the guard refuses or the schedule's retention cannot see.
// Siblings of an earlier attempt that no longer describe the new artifact (.version, .sha256,
// and a .schedule when the snapshot has no schedule) are removed first.
func (d *pvcDestination) Store(_ context.Context, body io.Reader, info artifactInfo) error {
	if err := d.writeSibling(snapshot.UIDSuffix, []byte(d.uid+"\n")); err != nil {
		return err
	}
	stale := []string{snapshot.VersionSuffix, snapshot.ChecksumSuffix}
	if d.scheduleUID == "" {
		stale = append(stale, snapshot.ScheduleSuffix)
	} else if err := d.writeSibling(snapshot.ScheduleSuffix, []byte(d.scheduleUID+"\n")); err != nil {
		return err
	}
	for _, suffix := range stale {
		if err := os.Remove(d.path(suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return agentio.FSFailure("removing the "+suffix+" file of an earlier attempt", err)
		}
	}
	if err := d.writeAtomically("", body, d.wrapWriter); err != nil {
		return err
	}
	return d.writeSibling(snapshot.VersionSuffix, []byte(info.EtcdVersion+"\n"))
}

// StoreChecksum implements destination.
func (d *pvcDestination) StoreChecksum(_ context.Context, sum [sha256.Size]byte) error {
	return d.writeSibling(snapshot.ChecksumSuffix, snapshot.ChecksumFileContent(sum, d.name))
}

// CheckRoom implements destination: etcd would otherwise stream a large database only for the
// write to fail near its end. The space of an artifact this write replaces does not count,
// since both exist until the rename.
func (d *pvcDestination) CheckRoom(expected int64) error {
	if expected <= 0 || d.freeBytes == nil {
		return nil
	}
	free, err := d.freeBytes(d.folder)
	if err != nil {
		return agentio.FSFailure("reading the free space of the snapshot folder", err)
	}
	if free < expected {
		return snapshot.Failf(snapshot.ReasonNoSpace, "the snapshot needs about %d bytes but the volume has %d bytes free", expected, free)
	}
	return nil
}

func (d *pvcDestination) writeSibling(suffix string, content []byte) error {
	return d.writeAtomically(suffix, strings.NewReader(string(content)), nil)
}

// writeAtomically writes <name><suffix> through a temporary file in the same folder: written,
// synced, renamed over the final name, then the folder synced, so that after a crash or a full
// disk the final name holds either the old complete file or the new complete file. A failed
// write removes the temporary file.
func (d *pvcDestination) writeAtomically(suffix string, body io.Reader, wrap func(io.Writer) io.Writer) (err error) {
	what := "the artifact"
	if suffix != "" {
		what = "the " + suffix + " file"
	}
	tmp, err := os.CreateTemp(d.folder, d.tempPattern(suffix))
	if err != nil {
		return agentio.FSFailure("creating a temporary file for "+what, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	var w io.Writer = tmp
	var cache *agentio.DropBehind
	if suffix == "" {
		cache = agentio.NewDropBehind(tmp)
		w = cache
	}
	if wrap != nil {
		w = wrap(w)
	}
	if _, err := io.Copy(w, body); err != nil {
		if _, fromBody := errors.AsType[*snapshot.Failure](err); fromBody {
			return err
		}
		return agentio.FSFailure("writing "+what, err)
	}
	if err := tmp.Chmod(pvcFileMode); err != nil {
		return agentio.FSFailure("setting the permissions of "+what, err)
	}
	if err := tmp.Sync(); err != nil {
		return agentio.FSFailure("syncing "+what, err)
	}
	if cache != nil {
		cache.Release()
	}
	if err := tmp.Close(); err != nil {
		return agentio.FSFailure("closing "+what, err)
	}
	if err := os.Rename(tmp.Name(), d.path(suffix)); err != nil {
		return agentio.FSFailure("renaming "+what+" into place", err)
	}
	return syncDir(d.folder)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir) //nolint:gosec // G304: the snapshot folder the Job mounts
	if err != nil {
		return agentio.FSFailure("opening the snapshot folder to sync it", err)
	}
	defer func() { _ = f.Close() }()
	if err := f.Sync(); err != nil {
		return agentio.FSFailure("syncing the snapshot folder", err)
	}
	return nil
}
