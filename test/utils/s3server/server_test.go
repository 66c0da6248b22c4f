package s3server_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/etcd-operator/etcd-operator/test/utils/s3server"
)

// TestServer drives the real server through the SDK the operator will use, configured as the
// operator will configure it (path-style, checksums only when required), over each behaviour
// that backups rely on. One server serves every subtest: starting one takes seconds.
func TestServer(t *testing.T) {
	t.Parallel()
	srv := s3server.StartForTest(t, s3server.Options{})
	bucket := srv.CreateBucketForTest(t)

	t.Run("put then get returns the same bytes", putGet(srv, bucket))
	t.Run("multipart upload of more than 5 MiB, streamed", multipartStreamed(srv, bucket))
	t.Run("HeadObject returns user metadata", headObjectMetadata(srv, bucket))
	t.Run("a wrong secret is refused with 403", wrongSecret(srv, bucket))
	t.Run("a missing bucket is NoSuchBucket, never created on the fly", missingBucket(srv, bucket))
}

// putGet checks that an object reads back as it was written.
func putGet(srv *s3server.Server, bucket string) func(*testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		client := srv.Client()
		body := []byte("an etcd snapshot, in miniature")
		if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String("small/object"), Body: bytes.NewReader(body),
		}); err != nil {
			t.Fatalf("PutObject: %v", err)
		}
		out, err := client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("small/object")})
		if err != nil {
			t.Fatalf("GetObject: %v", err)
		}
		defer func() { _ = out.Body.Close() }()
		got, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatalf("reading the object: %v", err)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("GetObject returned %q, want %q", got, body)
		}
	}
}

// multipartStreamed uploads a stream of unknown length of more than 5 MiB in parts and reads
// it back.
func multipartStreamed(srv *s3server.Server, bucket string) func(*testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		client := srv.Client()
		// The source is a stream of unknown length, as an etcd snapshot is: it is cut into
		// parts of the 5 MiB minimum as it is read, one part in memory at a time, the last
		// one short.
		const partSize = 5 << 20
		const total = 2*partSize + 123457
		want := sha256.New()
		src := io.TeeReader(io.LimitReader(&patternReader{}, total), want)
		key := aws.String("multipart/snapshot.db")
		created, err := client.CreateMultipartUpload(t.Context(), &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: key})
		if err != nil {
			t.Fatalf("CreateMultipartUpload: %v", err)
		}
		buf := make([]byte, partSize)
		var parts []types.CompletedPart
		for n := int32(1); ; n++ {
			size, err := io.ReadFull(src, buf)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("reading the source: %v", err)
			}
			up, err := client.UploadPart(t.Context(), &s3.UploadPartInput{
				Bucket: aws.String(bucket), Key: key, UploadId: created.UploadId, PartNumber: aws.Int32(n),
				Body: bytes.NewReader(buf[:size]), ContentLength: aws.Int64(int64(size)),
			})
			if err != nil {
				t.Fatalf("UploadPart %d: %v", n, err)
			}
			parts = append(parts, types.CompletedPart{ETag: up.ETag, PartNumber: aws.Int32(n)})
		}
		if len(parts) != 3 {
			t.Fatalf("uploaded %d parts, want 3", len(parts))
		}
		if _, err := client.CompleteMultipartUpload(t.Context(), &s3.CompleteMultipartUploadInput{
			Bucket: aws.String(bucket), Key: key, UploadId: created.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		}); err != nil {
			t.Fatalf("CompleteMultipartUpload: %v", err)
		}
		out, err := client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: key})
		if err != nil {
			t.Fatalf("GetObject: %v", err)
		}
		defer func() { _ = out.Body.Close() }()
		got := sha256.New()
		n, err := io.Copy(got, out.Body)
		if err != nil {
			t.Fatalf("reading the object: %v", err)
		}
		if n != total {
			t.Fatalf("object has %d bytes, want %d", n, total)
		}
		if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
			t.Fatal("the object read back differs from the stream uploaded")
		}
	}
}

// headObjectMetadata checks that HeadObject returns an object's user metadata, which the
// operator's overwrite guard reads.
func headObjectMetadata(srv *s3server.Server, bucket string) func(*testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		client := srv.Client()
		key := aws.String("with/metadata")
		if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: key, Body: bytes.NewReader([]byte("x")),
			Metadata: map[string]string{"snapshot-uid": "0b6f5d1e-7c1a-4d3b-9a55-1f2e3d4c5b6a"},
		}); err != nil {
			t.Fatalf("PutObject: %v", err)
		}
		head, err := client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: key})
		if err != nil {
			t.Fatalf("HeadObject: %v", err)
		}
		if got := head.Metadata["snapshot-uid"]; got != "0b6f5d1e-7c1a-4d3b-9a55-1f2e3d4c5b6a" {
			t.Fatalf("HeadObject metadata = %v, want snapshot-uid", head.Metadata)
		}
		if aws.ToInt64(head.ContentLength) != 1 {
			t.Fatalf("HeadObject ContentLength = %d, want 1", aws.ToInt64(head.ContentLength))
		}
	}
}

// wrongSecret checks that requests signed with a wrong secret or an unknown access key are
// refused with 403 and write nothing.
func wrongSecret(srv *s3server.Server, bucket string) func(*testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		client := srv.Client()
		bad := srv.ClientWithCredentials(srv.AccessKey, "not-"+srv.SecretKey)
		_, err := bad.PutObject(t.Context(), &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String("forged"), Body: bytes.NewReader([]byte("x")),
		})
		assertAPIError(t, err, http.StatusForbidden, "AccessDenied", "SignatureDoesNotMatch")
		_, err = bad.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		assertAPIError(t, err, http.StatusForbidden, "AccessDenied", "SignatureDoesNotMatch")
		// An unknown access key is refused too.
		unknown := srv.ClientWithCredentials("AKUNKNOWN", srv.SecretKey)
		_, err = unknown.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		assertAPIError(t, err, http.StatusForbidden, "AccessDenied", "InvalidAccessKeyId")
		// Nothing was written by the refused PUT.
		_, err = client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("forged")})
		assertAPIError(t, err, http.StatusNotFound, "NotFound", "NoSuchKey")
	}
}

// missingBucket checks that a missing bucket is NoSuchBucket and is not created by a PUT.
func missingBucket(srv *s3server.Server, bucket string) func(*testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		client := srv.Client()
		_, err := client.PutObject(t.Context(), &s3.PutObjectInput{
			Bucket: aws.String("no-such-bucket"), Key: aws.String("k"), Body: bytes.NewReader([]byte("x")),
		})
		assertAPIError(t, err, http.StatusNotFound, "NoSuchBucket")
		_, err = client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("no-such-bucket")})
		assertAPIError(t, err, http.StatusNotFound, "NoSuchBucket")
	}
}

// patternReader is an endless stream whose bytes depend on their offset, so a part stored
// twice, lost or out of order changes the digest.
type patternReader struct{ off int }

func (r *patternReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.off*7 + r.off>>12)
		r.off++
	}
	return len(p), nil
}

// assertAPIError checks that err is an S3 error with the HTTP status and one of the codes.
func assertAPIError(t *testing.T, err error, status int, codes ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("succeeded, want HTTP %d %v", status, codes)
	}
	var respErr *smithyhttp.ResponseError
	if !errors.As(err, &respErr) {
		t.Fatalf("error %v has no HTTP response, want HTTP %d %v", err, status, codes)
	}
	if respErr.HTTPStatusCode() != status {
		t.Fatalf("HTTP %d (%v), want %d %v", respErr.HTTPStatusCode(), err, status, codes)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v carries no S3 error code, want %v", err, codes)
	}
	for _, c := range codes {
		if apiErr.ErrorCode() == c {
			return
		}
	}
	t.Fatalf("error code %q (%v), want one of %v", apiErr.ErrorCode(), err, codes)
}

// TestServerOnAnotherAddress: Options.Host moves every listener and the endpoint there (e2e
// tests use the local cluster's host address), and nothing answers on 127.0.0.1 at its port.
func TestServerOnAnotherAddress(t *testing.T) {
	t.Parallel()
	srv := s3server.StartForTest(t, s3server.Options{Host: "127.0.0.2"})
	u, err := url.Parse(srv.Endpoint)
	if err != nil || u.Hostname() != "127.0.0.2" {
		t.Fatalf("endpoint %s (%v), want one on 127.0.0.2", srv.Endpoint, err)
	}
	bucket := srv.CreateBucketForTest(t)
	srv.PutObjectForTest(t, bucket, "k", []byte("v"))
	if body, _ := srv.ObjectForTest(t, bucket, "k"); string(body) != "v" {
		t.Errorf("read back %q", body)
	}
	if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", u.Port())); err == nil {
		_ = conn.Close()
		t.Errorf("127.0.0.1:%s answers: the server did not bind only to its Host", u.Port())
	}
}
