package pinned

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// S3ServerSource is the folder, relative to the repository root, of the S3-compatible server
// that tests run (SeaweedFS). Its go.mod is the one place where the SeaweedFS version is pinned
// (docs/local-cluster.md, "S3 server").
const S3ServerSource = "hack/s3server"

// S3ServerModule is SeaweedFS's module; its version in S3ServerSource's go.mod names the cache
// folder.
const S3ServerModule = "github.com/seaweedfs/seaweedfs"

// S3ServerBinary is the name of the S3 server in the cache.
const S3ServerBinary = "s3server"

// s3ServerPackage is the main package in S3ServerSource.
const s3ServerPackage = "github.com/etcd-operator/etcd-operator/hack/s3server"

// s3ServerLdflags drop the symbol table and DWARF: the binary links all of SeaweedFS's commands
// and would be about 230 MB with them.
const s3ServerLdflags = "-s -w"

// S3ServerVersion reads the SeaweedFS version (a module version such as
// v0.0.0-20261109003541-7506e5f91cd6, with its v: SeaweedFS publishes no semver tags that the
// proxy serves) that S3ServerSource's go.mod under repoRoot requires.
func S3ServerVersion(repoRoot string) (string, error) {
	path := filepath.Join(repoRoot, S3ServerSource, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the pinned SeaweedFS version: %w", err)
	}
	v, err := RequiredVersion(data, S3ServerModule)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// S3Server builds (or reuses) S3ServerBinary from S3ServerSource under repoRoot and returns its
// folder, $CACHE/bin/seaweedfs-<version>. Like CertManager it is built in place.
func (b *Builder) S3Server(ctx context.Context, repoRoot string) (string, error) {
	version, err := S3ServerVersion(repoRoot)
	if err != nil {
		return "", err
	}
	return b.ensureInPlace(ctx, filepath.Join(repoRoot, S3ServerSource), "seaweedfs-"+version,
		S3ServerBinary, s3ServerPackage, s3ServerLdflags)
}
