package snapshotagent

import (
	"context"
	"crypto/sha256"
	"io"

	"github.com/etcd-operator/etcd-operator/internal/retention"
)

// destination is where an artifact is stored: a folder on a mounted PVC, or an S3 bucket.
type destination interface {
	// URI names the artifact in the result.
	URI() string
	// Prepare checks what can be checked before etcd is asked for anything (the overwrite
	// guard, the bucket, the folder), so that a snapshot bound to fail costs etcd nothing.
	Prepare(ctx context.Context) error
	// CheckRoom fails when the destination cannot hold an artifact of about size bytes,
	// before etcd starts streaming it.
	CheckRoom(size int64) error
	// Store reads body to its end and stores it as the artifact. When Store returns nil the
	// complete artifact is in place; when it fails, no partial artifact is left at the
	// artifact's name. body's own errors come back unchanged.
	Store(ctx context.Context, body io.Reader, info artifactInfo) error
	// StoreChecksum writes the .sha256 sidecar next to the stored artifact.
	StoreChecksum(ctx context.Context, sum [sha256.Size]byte) error

	// FindCandidates lists the artifacts next to this one (same folder or key prefix) whose
	// names owner.Candidate accepts, each with the schedule UID it records ("" for none).
	FindCandidates(ctx context.Context, owner retention.Owner) ([]retention.Found, error)
	// DeleteArtifact deletes the artifact of snapshot name, which FindCandidates found, and the
	// files the agent wrote next to it.
	DeleteArtifact(ctx context.Context, name string) error
}

// artifactInfo is what a destination records with the artifact.
type artifactInfo struct {
	// EtcdVersion is the server version that served the snapshot.
	EtcdVersion string
}
