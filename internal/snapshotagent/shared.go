package snapshotagent

import (
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// The restore agent (internal/restoreagent) reads the artifacts this agent writes, from the same
// stores with the same credentials Secrets. It uses this agent's S3 client and failure
// classification, so that both talk to a store alike (static credentials only, path-style
// addressing, a private CA, no checksum trailers that S3-compatible stores reject) and report a
// refused key or a full volume with the same reason.

// NewS3Client builds the S3 client of cfg (cfg.KeyPrefix is not used). It returns the secret
// values read, for redaction.
func NewS3Client(cfg snapshot.S3Config) (*s3.Client, []string, error) { return newS3Client(cfg) }

// S3Failure classifies an S3 error as StoreUnreachable, AccessDenied, BucketNotFound or
// StoreFailed, prefixed with what was being done.
func S3Failure(doing string, err error) error { return s3Failure(doing, err) }

// HTTPStatus is the HTTP status of an S3 error response, 0 for other errors.
func HTTPStatus(err error) int { return httpStatus(err) }

// FSFailure classifies a file-system error as NoSpace, AccessDenied or StoreFailed.
func FSFailure(doing string, err error) error { return fsFailure(doing, err) }

// FreeBytes is the space available to an unprivileged writer in dir's file system.
func FreeBytes(dir string) (int64, error) { return statfsFree(dir) }

// Redact removes secrets from err's text, keeping its reason.
func Redact(err error, secrets []string) error { return redact(err, secrets) }

// DropBehind wraps a large file being written so that it does not fill the page cache (see
// dropBehind); release drops the whole file once it is synced.
func DropBehind(f *os.File) (w io.Writer, release func()) {
	d := newDropBehind(f)
	return d, d.release
}
