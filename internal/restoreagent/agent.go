package restoreagent

import (
	"context"
	"io"
	"os/exec"
	"time"

	"github.com/go-logr/logr"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// source is where the artifact comes from: an S3 object or a file on a mounted claim.
type source interface {
	// Stat describes the artifact; restore.ReasonArtifactNotFound when there is none.
	Stat(ctx context.Context) (artifact, error)
	// Sidecar reads the artifact's .sha256 sidecar, if there is one.
	Sidecar(ctx context.Context) (restore.Sidecar, error)
	// Open streams the artifact described by Stat.
	Open(ctx context.Context) (io.ReadCloser, error)
}

// artifact is what the source says of the snapshot before it is read.
type artifact struct {
	// Size is its size in bytes.
	Size int64
	// Version is the etcd version recorded with it (S3 metadata etcd-snapshot-version, the
	// .version sibling on a PVC); empty when none is.
	Version string
}

// maxSidecarBytes bounds what is read of a sidecar: a sha256sum line is well under 1 KiB.
const maxSidecarBytes = 4096

// agent restores one data dir from one source.
type agent struct {
	cfg restore.Config
	log logr.Logger
	src source
	// lookPath finds etcdutl in PATH; exec.LookPath unless a test replaces it.
	lookPath func(string) (string, error)
	// freeBytes reports the space available in a folder; statfs unless a test replaces it.
	freeBytes func(string) (int64, error)
}

// Restore restores cfg.DataDir from the snapshot cfg names. The returned error is a
// *snapshot.Failure with the reason (snapshot.ReasonOf); its text never holds a secret key.
func Restore(ctx context.Context, cfg restore.Config, log logr.Logger) (restore.Result, error) {
	a, secrets, err := newAgent(cfg, log)
	if err != nil {
		return restore.Result{URI: cfg.URI()}, agentio.Redact(err, secrets)
	}
	res, err := a.run(ctx)
	return res, agentio.Redact(err, secrets)
}

func newAgent(cfg restore.Config, log logr.Logger) (*agent, []string, error) {
	a := &agent{cfg: cfg, log: log, lookPath: exec.LookPath, freeBytes: agentio.FreeBytes}
	switch {
	case cfg.PVC != nil:
		a.src = newPVCSource(*cfg.PVC)
	case cfg.S3 != nil:
		src, secrets, err := newS3Source(*cfg.S3)
		if err != nil {
			return nil, secrets, err
		}
		a.src = src
		return a, secrets, nil
	default:
		return nil, nil, snapshot.Failf(snapshot.ReasonInvalidConfig, "no restore source configured")
	}
	return a, nil, nil
}

// run performs the steps of the package documentation.
func (a *agent) run(ctx context.Context) (restore.Result, error) {
	res := restore.Result{URI: a.cfg.URI()}
	dataDir := a.cfg.DataDir
	if done, err := holdsMember(dataDir); err != nil || done {
		if err == nil {
			res.Outcome, res.Message = restore.OutcomeAlreadyRestored, "the data dir holds member/ already; nothing was restored"
			a.log.Info(res.Message)
		}
		return res, err
	}
	etcdutl, err := resolveEtcdutl(a.cfg.Etcdutl, a.lookPath)
	if err != nil {
		return res, err
	}
	if err := removeStaging(dataDir); err != nil {
		return res, err
	}
	art, err := a.src.Stat(ctx)
	if err != nil {
		return res, err
	}
	res.SizeBytes, res.SnapshotVersion = art.Size, art.Version
	if err := restore.CheckVersion(art.Version, a.cfg.EtcdVersion); err != nil {
		return res, err
	}
	if err := a.checkRoom(restore.DataNeeded(art.Size)); err != nil {
		return res, err
	}
	want, how, err := a.expectedChecksum(ctx)
	if err != nil {
		return res, err
	}
	if err := a.download(ctx, art, want, how, &res); err != nil {
		return res, err
	}
	if err := a.restoreMember(ctx, etcdutl); err != nil {
		return res, err
	}
	res.Outcome = restore.OutcomeRestored
	return res, nil
}

// expectedChecksum decides what the artifact must hash to. The sidecar is read only when the
// spec names no checksum.
func (a *agent) expectedChecksum(ctx context.Context) (string, restore.Verification, error) {
	var sidecar restore.Sidecar
	if a.cfg.Checksum == "" {
		var err error
		if sidecar, err = a.src.Sidecar(ctx); err != nil {
			return "", "", err
		}
	}
	want, how, err := restore.ExpectedChecksum(a.cfg.Checksum, sidecar)
	if err == nil && how == restore.Unverified {
		a.log.Info("no checksum to verify the snapshot against: the spec names none and there is no " + snapshot.ChecksumSuffix +
			" sidecar; restoring it unverified, relying on etcdutl's integrity hash only")
	}
	return want, how, err
}

// download copies the artifact onto the data volume, hashing it as it is written, and checks
// the digest. A mismatch removes the copy: nothing of it is restored.
func (a *agent) download(ctx context.Context, art artifact, want string, how restore.Verification, res *restore.Result) error {
	file := restore.DownloadFile(a.cfg.DataDir)
	a.log.Info("downloading the snapshot", "sizeBytes", art.Size, "snapshotVersion", art.Version, "verification", how)
	start := time.Now()
	sum, err := fetch(ctx, a.src, file, art.Size)
	if err != nil {
		return err
	}
	res.Checksum, res.Verification = sum, how
	if err := restore.CheckChecksum(want, how, sum); err != nil {
		return removeAfter(err, file)
	}
	a.log.Info("snapshot downloaded", "checksum", sum, "verification", how, "seconds", time.Since(start).Seconds())
	return nil
}

// restoreMember runs etcdutl into the staging folder and moves its member/ into place.
func (a *agent) restoreMember(ctx context.Context, etcdutl string) error {
	staging := restore.StagingDir(a.cfg.DataDir)
	start := time.Now()
	if err := runEtcdutl(ctx, etcdutl, a.cfg, restore.DownloadFile(a.cfg.DataDir), staging); err != nil {
		return removeAfter(err, staging, restore.DownloadFile(a.cfg.DataDir))
	}
	if err := moveIntoPlace(staging, a.cfg.DataDir); err != nil {
		return removeAfter(err, staging, restore.DownloadFile(a.cfg.DataDir))
	}
	a.log.Info("member restored", "name", a.cfg.Name, "peerURL", a.cfg.PeerURL, "seconds", time.Since(start).Seconds())
	return nil
}

// checkRoom refuses a restore the data volume cannot hold, before anything is downloaded.
func (a *agent) checkRoom(need int64) error {
	free, err := a.freeBytes(a.cfg.DataDir)
	if err != nil {
		return agentio.FSFailure("reading the free space of the data volume", err)
	}
	if free < need {
		return snapshot.Failf(snapshot.ReasonNoSpace, "the restore needs %d bytes on the data volume (twice the snapshot, and the first WAL segment) but it has %d bytes free; "+
			"recreate the cluster with a larger spec.storage.size", need, free)
	}
	return nil
}
