package s3server

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// RequireBinary returns the server binary, or skips the test with the reason when
// S3SERVER_BIN_DIR is unset, which happens only outside `make test`. In CI (CI=true) that is a
// failure too, so a green CI run never means the S3 tests were skipped. Every other problem is a
// failure.
func RequireBinary(tb testing.TB) string {
	tb.Helper()
	b, err := FindBinary()
	if errors.Is(err, ErrNoBinary) && os.Getenv("CI") != "true" {
		tb.Skipf("skipping test that needs a real S3 server: %v", err)
	}
	if err != nil {
		tb.Fatalf("finding the S3 server: %v", err)
	}
	return b
}

// StartForTest starts a server for one test: it skips when there is no binary (RequireBinary),
// uses a folder under tb.TempDir() when opts.Dir is empty, kills the server when the test ends
// and, if the test failed, logs the tail of the server's log.
func StartForTest(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.Binary == "" {
		opts.Binary = RequireBinary(tb)
	}
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	s, err := Start(tb.Context(), opts)
	if err != nil {
		tb.Fatalf("starting the S3 server: %v", err)
	}
	// Registered after TempDir, so it runs before the folder is removed.
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("s3server log tail (%s):\n%s", s.LogPath, s.LogTail(40))
		}
		if err := s.Close(); err != nil {
			tb.Errorf("stopping the S3 server: %v", err)
		}
	})
	return s
}

// CreateBucketForTest creates a bucket with a unique name for the test and returns the name;
// it fails the test on error.
func (s *Server) CreateBucketForTest(tb testing.TB) string {
	tb.Helper()
	name, err := s.CreateBucket(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	return name
}

// ObjectForTest returns the body and user metadata of bucket/key; it fails the test on error.
func (s *Server) ObjectForTest(tb testing.TB, bucket, key string) ([]byte, map[string]string) {
	tb.Helper()
	out, err := s.Client().GetObject(tb.Context(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		tb.Fatalf("GetObject %s/%s: %v", bucket, key, err)
	}
	defer func() { _ = out.Body.Close() }()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		tb.Fatalf("reading %s/%s: %v", bucket, key, err)
	}
	return body, out.Metadata
}

// PutObjectForTest stores body at bucket/key; it fails the test on error.
func (s *Server) PutObjectForTest(tb testing.TB, bucket, key string, body []byte) {
	tb.Helper()
	if _, err := s.Client().PutObject(tb.Context(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
		tb.Fatalf("PutObject %s/%s: %v", bucket, key, err)
	}
}
