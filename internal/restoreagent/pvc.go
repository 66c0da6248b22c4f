package restoreagent

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// pvcSource reads <Dir>/<Path> and its siblings .version and .sha256 from a claim mounted
// read-only.
type pvcSource struct {
	root, file string
}

func newPVCSource(cfg restore.PVCSource) *pvcSource {
	return &pvcSource{root: cfg.Dir, file: filepath.Join(cfg.Dir, filepath.FromSlash(cfg.Path))}
}

// Stat implements source. A symbolic link is followed (a "latest.db" pointing at the newest
// artifact is a reasonable layout); a folder is refused.
func (s *pvcSource) Stat(context.Context) (artifact, error) {
	if fi, err := os.Stat(s.root); err != nil || !fi.IsDir() {
		return artifact{}, snapshot.Failf(snapshot.ReasonInvalidConfig, "%s=%s is not a mounted folder", restore.EnvPVCDir, s.root)
	}
	fi, err := os.Stat(s.file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return artifact{}, snapshot.Failf(restore.ReasonArtifactNotFound, "the claim holds no snapshot file %s", s.rel())
	case err != nil:
		return artifact{}, agentio.FSFailure("reading the snapshot file", err)
	case !fi.Mode().IsRegular():
		return artifact{}, snapshot.Failf(snapshot.ReasonInvalidConfig, "%s on the claim is not a file; name the snapshot file itself", s.rel())
	}
	version, _, err := s.sibling(snapshot.VersionSuffix, 64)
	if err != nil {
		return artifact{}, err
	}
	return artifact{Size: fi.Size(), Version: strings.TrimSpace(string(version))}, nil
}

// Sidecar implements source.
func (s *pvcSource) Sidecar(context.Context) (restore.Sidecar, error) {
	content, present, err := s.sibling(snapshot.ChecksumSuffix, maxSidecarBytes)
	return restore.Sidecar{Present: present, Content: content}, err
}

// Open implements source.
func (s *pvcSource) Open(context.Context) (io.ReadCloser, error) {
	f, err := os.Open(s.file)
	if err != nil {
		return nil, agentio.FSFailure("opening the snapshot file", err)
	}
	return f, nil
}

// sibling reads at most limit bytes of <file><suffix>; present is false when it does not exist.
func (s *pvcSource) sibling(suffix string, limit int64) ([]byte, bool, error) {
	f, err := os.Open(s.file + suffix) //nolint:gosec // G304: a sibling of the snapshot file the spec names, on a read-only claim
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, agentio.FSFailure("opening the snapshot's "+suffix+" file", err)
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, false, agentio.FSFailure("reading the snapshot's "+suffix+" file", err)
	}
	return data, true, nil
}

func (s *pvcSource) rel() string {
	rel, err := filepath.Rel(s.root, s.file)
	if err != nil {
		return s.file
	}
	return filepath.ToSlash(rel)
}
