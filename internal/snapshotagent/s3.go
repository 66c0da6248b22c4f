package snapshotagent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

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

// s3DialTimeout bounds connecting to the store, as the etcd dial timeout does for etcd; the SDK's
// retries (3 attempts) come on top.
const s3DialTimeout = 10 * time.Second

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
		if httpStatus(err) == http.StatusNotFound {
			return snapshot.Failf(snapshot.ReasonBucketNotFound, "bucket %q does not exist", d.bucket)
		}
		return s3Failure("checking bucket "+d.bucket, err)
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
	if httpStatus(err) == http.StatusNotFound {
		return snapshot.Existing{}, nil
	}
	if err != nil {
		return snapshot.Existing{}, s3Failure("checking for an existing artifact", err)
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
		return s3Failure("writing the checksum sidecar", err)
	}
	return nil
}

// newS3Client builds the S3 client of cfg. It uses no shared AWS configuration (~/.aws, IMDS):
// the Job's credentials are the only ones it may use.
func newS3Client(cfg snapshot.S3Config) (*s3.Client, []string, error) {
	id, err := readCredential(cfg.AccessKeyID, snapshot.EnvS3CredentialsDir, false)
	if err != nil {
		return nil, nil, err
	}
	secret, err := readCredential(cfg.SecretAccessKey, snapshot.EnvS3CredentialsDir, false)
	if err != nil {
		return nil, nil, err
	}
	token, err := readCredential(cfg.SessionToken, snapshot.EnvS3CredentialsDir, true)
	if err != nil {
		return nil, nil, err
	}
	if id == "" || secret == "" {
		return nil, nil, snapshot.Failf(snapshot.ReasonInvalidConfig, "the S3 access key ID or secret access key is empty")
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pool, _, err := readCAPool(cfg.CAFile, snapshot.EnvS3CAFile)
		if err != nil {
			return nil, nil, snapshot.Fail(snapshot.ReasonInvalidConfig, err)
		}
		tlsCfg.RootCAs = pool
	}
	httpClient := awshttp.NewBuildableClient().
		WithTransportOptions(func(t *http.Transport) { t.TLSClientConfig = tlsCfg }).
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = s3DialTimeout })
	client := s3.New(s3.Options{
		Region:       cfg.Region,
		BaseEndpoint: aws.String(cfg.Endpoint),
		UsePathStyle: cfg.ForcePathStyle,
		Credentials:  credentials.NewStaticCredentialsProvider(id, secret, token),
		HTTPClient:   httpClient,
		// Checksums only where S3 requires them: the SDK's default adds CRC32 trailers
		// (aws-chunked uploads) that Ceph RGW and other S3-compatible stores reject. The
		// artifact's integrity is covered by its own SHA-256 sidecar.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	return client, []string{secret, token}, nil
}

// httpStatus is the HTTP status of an S3 error response, 0 for other errors.
func httpStatus(err error) int {
	if re, ok := errors.AsType[*awshttp.ResponseError](err); ok {
		return re.HTTPStatusCode()
	}
	return 0
}

// s3DeniedCodes are the error codes with which S3 and compatible stores refuse credentials or
// access.
var s3DeniedCodes = map[string]bool{
	"AccessDenied": true, "Forbidden": true, "InvalidAccessKeyId": true, "SignatureDoesNotMatch": true,
	"AllAccessDisabled": true, "AccountProblem": true, "InvalidToken": true, "ExpiredToken": true,
}

// s3Failure classifies an S3 error: a request that never got an answer is StoreUnreachable,
// a refusal AccessDenied, a missing bucket BucketNotFound, anything else StoreFailed.
func s3Failure(doing string, err error) error {
	reason := snapshot.ReasonStoreFailed
	apiErr, isAPI := errors.AsType[smithy.APIError](err)
	switch {
	case isAPI && apiErr.ErrorCode() == "NoSuchBucket":
		reason = snapshot.ReasonBucketNotFound
	case isAPI && s3DeniedCodes[apiErr.ErrorCode()], httpStatus(err) == http.StatusForbidden:
		reason = snapshot.ReasonAccessDenied
	case isRequestSendError(err):
		reason = snapshot.ReasonStoreUnreachable
	}
	return snapshot.Failf(reason, "%s: %w", doing, err)
}

func isRequestSendError(err error) bool {
	_, ok := errors.AsType[*smithyhttp.RequestSendError](err)
	return ok
}
