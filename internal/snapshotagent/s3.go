package snapshotagent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"maps"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// s3API is the part of the S3 client the agent uses; *s3.Client implements it.
type s3API interface {
	HeadBucket(ctx context.Context, in *s3.HeadBucketInput, opts ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	// ListObjectsV2 and DeleteObject serve the schedule's retention (prune.go).
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	multipartAPI
}

// s3Destination writes the object <key>/<name>.db with the snapshot's UID, its schedule's UID
// (for a schedule's snapshot) and the etcd version as metadata, then the sidecar object
// <key>/<name>.db.sha256 (docs/backup-restore.md, "In S3").
type s3Destination struct {
	api              s3API
	bucket, key, uid string
	// folder is the key's part before the file name, where the schedule's other artifacts are.
	folder string
	// scheduleUID is the UID of the schedule the snapshot belongs to; empty for a one-off.
	scheduleUID         string
	checksumKey, sumFor string
	partSize            int
}

func newS3Destination(api s3API, cfg snapshot.S3Config, snapshotName, uid, scheduleUID string) *s3Destination {
	key := snapshot.ObjectKey(cfg.KeyPrefix, snapshotName)
	return &s3Destination{
		api: api, bucket: cfg.Bucket, key: key, uid: uid,
		folder:      snapshot.ObjectFolder(cfg.KeyPrefix),
		scheduleUID: scheduleUID,
		checksumKey: key + snapshot.ChecksumSuffix,
		sumFor:      snapshot.ArtifactFileName(snapshotName),
		partSize:    partSize,
	}
}

// metadata is what the artifact and its sidecar record: the snapshot's UID (the overwrite
// guard's key) and, for a schedule's snapshot, the schedule's UID (retention's mark), plus
// extra.
func (d *s3Destination) metadata(extra map[string]string) map[string]string {
	meta := map[string]string{snapshot.MetadataUID: d.uid}
	if d.scheduleUID != "" {
		meta[snapshot.MetadataScheduleUID] = d.scheduleUID
	}
	maps.Copy(meta, extra)
	return meta
}

// URI implements destination.
func (d *s3Destination) URI() string { return snapshot.S3URI(d.bucket, d.key) }

// Prepare implements destination: the bucket must exist and be reachable with these
// credentials, and the overwrite guard reads the existing object's metadata. HeadBucket comes
// first because a HEAD of a missing object in a missing bucket answers a bare 404 that does not
// say which of the two is missing.
func (d *s3Destination) Prepare(ctx context.Context) error {
	if _, err := d.api.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &d.bucket}); err != nil {
		if agentio.HTTPStatus(err) == http.StatusNotFound {
			return snapshot.Failf(snapshot.ReasonBucketNotFound, "bucket %q does not exist", d.bucket)
		}
		return agentio.S3Failure("checking bucket "+d.bucket, err)
	}
	existing, err := d.existing(ctx)
	if err != nil {
		return err
	}
	return snapshot.CheckOverwrite(existing, d.uid)
}

// existing reads the metadata of an object at the artifact's key. Only a 404 means "absent":
// a 403, which S3 also answers for a missing key when the credentials lack ListBucket, fails
// closed rather than risk overwriting an object that exists.
func (d *s3Destination) existing(ctx context.Context) (snapshot.Existing, error) {
	out, err := d.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.bucket, Key: &d.key})
	if agentio.HTTPStatus(err) == http.StatusNotFound {
		return snapshot.Existing{}, nil
	}
	if err != nil {
		return snapshot.Existing{}, agentio.S3Failure("checking for an existing artifact", err)
	}
	return snapshot.Existing{Present: true, UID: out.Metadata[snapshot.MetadataUID]}, nil
}

// CheckRoom implements destination: a bucket has no size a client can read.
func (d *s3Destination) CheckRoom(int64) error { return nil }

// Store implements destination with a multipart upload of partSize parts, which S3 assembles
// only on completion: a failed upload is aborted and leaves no object behind.
func (d *s3Destination) Store(ctx context.Context, body io.Reader, info artifactInfo) error {
	meta := d.metadata(map[string]string{snapshot.MetadataVersion: info.EtcdVersion})
	return uploadMultipart(ctx, d.api, multipartTarget{Bucket: d.bucket, Key: d.key, Metadata: meta, PartSize: d.partSize}, body)
}

// StoreChecksum implements destination. The sidecar carries the UIDs too, so that a prune
// deletes a sidecar only when it is the pruned schedule's.
func (d *s3Destination) StoreChecksum(ctx context.Context, sum [sha256.Size]byte) error {
	content := snapshot.ChecksumFileContent(sum, d.sumFor)
	_, err := d.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &d.bucket,
		Key:           &d.checksumKey,
		Body:          bytes.NewReader(content),
		ContentLength: aws.Int64(int64(len(content))),
		ContentType:   aws.String("text/plain"),
		Metadata:      d.metadata(nil),
	})
	if err != nil {
		return agentio.S3Failure("writing the checksum sidecar", err)
	}
	return nil
}
