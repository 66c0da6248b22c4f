package restoreagent

import (
	"context"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// s3API is the part of the S3 client the agent uses; *s3.Client implements it.
type s3API interface {
	HeadBucket(ctx context.Context, in *s3.HeadBucketInput, opts ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// s3Source reads one exact object and its sidecar object <key>.sha256.
type s3Source struct {
	api         s3API
	bucket, key string
	// etag is the object's ETag as Stat saw it: Open reads that object and no other, so that
	// an object replaced in between is not restored under the first one's size and version.
	etag *string
}

func newS3Source(cfg restore.S3Source) (*s3Source, []string, error) {
	client, secrets, err := agentio.NewS3Client(cfg.Store)
	if err != nil {
		return nil, secrets, err
	}
	return &s3Source{api: client, bucket: cfg.Store.Bucket, key: cfg.Key}, secrets, nil
}

// Stat implements source. HeadBucket comes first because a HEAD of a missing object in a
// missing bucket answers a bare 404 that does not say which of the two is missing.
func (s *s3Source) Stat(ctx context.Context) (artifact, error) {
	if _, err := s.api.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket}); err != nil {
		if agentio.HTTPStatus(err) == http.StatusNotFound {
			return artifact{}, snapshot.Failf(snapshot.ReasonBucketNotFound, "bucket %q does not exist", s.bucket)
		}
		return artifact{}, agentio.S3Failure("checking bucket "+s.bucket, err)
	}
	out, err := s.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &s.key})
	if agentio.HTTPStatus(err) == http.StatusNotFound {
		return artifact{}, snapshot.Failf(restore.ReasonArtifactNotFound, "bucket %q holds no object %q", s.bucket, s.key)
	}
	if err != nil {
		return artifact{}, agentio.S3Failure("reading the snapshot object's metadata", err)
	}
	s.etag = out.ETag
	return artifact{Size: aws.ToInt64(out.ContentLength), Version: out.Metadata[snapshot.MetadataVersion]}, nil
}

// Sidecar implements source.
func (s *s3Source) Sidecar(ctx context.Context) (restore.Sidecar, error) {
	key := s.key + snapshot.ChecksumSuffix
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if agentio.HTTPStatus(err) == http.StatusNotFound {
		return restore.Sidecar{}, nil
	}
	if err != nil {
		return restore.Sidecar{}, agentio.S3Failure("reading the "+snapshot.ChecksumSuffix+" sidecar", err)
	}
	defer func() { _ = out.Body.Close() }()
	content, err := io.ReadAll(io.LimitReader(out.Body, maxSidecarBytes))
	if err != nil {
		return restore.Sidecar{}, agentio.S3Failure("reading the "+snapshot.ChecksumSuffix+" sidecar", err)
	}
	return restore.Sidecar{Present: true, Content: content}, nil
}

// Open implements source.
func (s *s3Source) Open(ctx context.Context) (io.ReadCloser, error) {
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &s.key, IfMatch: s.etag})
	if agentio.HTTPStatus(err) == http.StatusPreconditionFailed {
		return nil, snapshot.Failf(snapshot.ReasonStoreFailed, "the snapshot object changed since its metadata was read; restoring again")
	}
	if err != nil {
		return nil, agentio.S3Failure("downloading the snapshot", err)
	}
	return out.Body, nil
}
