package snapshotagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// responseError is an S3 error response with an HTTP status, as the SDK returns it.
func responseError(status int, code string) error {
	var err error = &smithy.GenericAPIError{Code: code, Message: code}
	if code == "" {
		err = errors.New("http response error") // a HEAD response has no body, hence no code
	}
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      err,
	}}
}

func TestS3Failure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want snapshot.Reason
	}{
		{responseError(http.StatusForbidden, ""), snapshot.ReasonAccessDenied},
		{responseError(http.StatusForbidden, "SignatureDoesNotMatch"), snapshot.ReasonAccessDenied},
		{responseError(http.StatusForbidden, "InvalidAccessKeyId"), snapshot.ReasonAccessDenied},
		{responseError(http.StatusNotFound, "NoSuchBucket"), snapshot.ReasonBucketNotFound},
		{responseError(http.StatusInternalServerError, "InternalError"), snapshot.ReasonStoreFailed},
		{&smithyhttp.RequestSendError{Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}, snapshot.ReasonStoreUnreachable},
		{fmt.Errorf("operation error S3: PutObject: %w", &smithyhttp.RequestSendError{Err: errors.New("x509: certificate signed by unknown authority")}), snapshot.ReasonStoreUnreachable},
		{errInjected, snapshot.ReasonStoreFailed},
	}
	for _, c := range cases {
		if got := snapshot.ReasonOf(agentio.S3Failure("doing", c.err)); got != c.want {
			t.Errorf("S3Failure(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

// fakeS3 keeps objects in memory and records multipart uploads.
type fakeS3 struct {
	mu sync.Mutex
	// headBucketErr and headObjectErr, when set, fail those calls.
	headBucketErr, headObjectErr error
	// listErr and deleteErr, when set, fail those calls.
	listErr, deleteErr error
	// failPart, when > 0, fails UploadPart of that part number.
	failPart int32
	deleted  []string
	objects  map[string]fakeObject
	uploads  map[string]map[int32][]byte
	aborted  int
	maxPart  int
}

type fakeObject struct {
	data     []byte
	metadata map[string]string
}

func newFakeS3() *fakeS3 {
	return &fakeS3{objects: map[string]fakeObject{}, uploads: map[string]map[int32][]byte{}}
}

func (f *fakeS3) HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error) {
	return &s3.HeadBucketOutput{}, f.headBucketErr
}

func (f *fakeS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.headObjectErr != nil {
		return nil, f.headObjectErr
	}
	o, ok := f.objects[*in.Key]
	if !ok {
		return nil, responseError(http.StatusNotFound, "")
	}
	return &s3.HeadObjectOutput{Metadata: o.metadata, ContentLength: aws.Int64(int64(len(o.data)))}, nil
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	data, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[*in.Key] = fakeObject{data: data, metadata: in.Metadata}
	return &s3.PutObjectOutput{}, nil
}

// ListObjectsV2 lists the keys under Prefix in order, up to the Delimiter, two per page so
// that callers must follow continuation tokens.
func (f *fakeS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	var keys []string
	for k := range f.objects {
		rest, ok := strings.CutPrefix(k, aws.ToString(in.Prefix))
		if ok && !strings.HasPrefix(k, "meta:") && (aws.ToString(in.Delimiter) == "" || !strings.Contains(rest, aws.ToString(in.Delimiter))) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = slices.DeleteFunc(keys, func(k string) bool { return k <= aws.ToString(in.ContinuationToken) })
	out := &s3.ListObjectsV2Output{}
	for i, k := range keys {
		if i == 2 {
			out.IsTruncated, out.NextContinuationToken = aws.Bool(true), aws.String(keys[1])
			break
		}
		out.Contents = append(out.Contents, types.Object{Key: aws.String(k)})
	}
	return out, nil
}

func (f *fakeS3) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleteErr != nil {
		return nil, f.deleteErr
	}
	delete(f.objects, *in.Key)
	f.deleted = append(f.deleted, *in.Key)
	return &s3.DeleteObjectOutput{}, nil
}

func (f *fakeS3) CreateMultipartUpload(_ context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("upload-%d", len(f.uploads))
	f.uploads[id] = map[int32][]byte{0: []byte(*in.Key)}
	f.objects["meta:"+id] = fakeObject{metadata: in.Metadata}
	return &s3.CreateMultipartUploadOutput{UploadId: &id}, nil
}

func (f *fakeS3) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if *in.PartNumber == f.failPart {
		return nil, responseError(http.StatusForbidden, "AccessDenied")
	}
	data, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uploads[*in.UploadId][*in.PartNumber] = data
	f.maxPart = max(f.maxPart, len(data))
	return &s3.UploadPartOutput{ETag: aws.String(fmt.Sprintf("etag-%d", *in.PartNumber))}, nil
}

func (f *fakeS3) CompleteMultipartUpload(_ context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := f.uploads[*in.UploadId]
	var data []byte
	for i, p := range in.MultipartUpload.Parts {
		if *p.PartNumber != int32(i+1) || *p.ETag != fmt.Sprintf("etag-%d", i+1) {
			return nil, fmt.Errorf("part %d listed as %d/%s", i+1, *p.PartNumber, *p.ETag)
		}
		data = append(data, parts[*p.PartNumber]...)
	}
	f.objects[*in.Key] = fakeObject{data: data, metadata: f.objects["meta:"+*in.UploadId].metadata}
	delete(f.uploads, *in.UploadId)
	return &s3.CompleteMultipartUploadOutput{}, nil
}

func (f *fakeS3) AbortMultipartUpload(_ context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.uploads, *in.UploadId)
	f.aborted++
	return &s3.AbortMultipartUploadOutput{}, nil
}

func s3Dest(f *fakeS3, uid string) *s3Destination {
	return newS3Destination(f, snapshot.S3Config{S3Store: agentenv.S3Store{Bucket: "etcd"}, KeyPrefix: "prod/"}, "nightly", uid, "")
}

func TestS3PrepareOverwriteGuard(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		setup    func(f *fakeS3)
		want     snapshot.Reason
		refusing bool
	}{
		{"no object", func(*fakeS3) {}, "", false},
		{"our own object", func(f *fakeS3) {
			f.objects["prod/nightly.db"] = fakeObject{metadata: map[string]string{snapshot.MetadataUID: ourUID}}
		}, "", false},
		{"another snapshot's object", func(f *fakeS3) {
			f.objects["prod/nightly.db"] = fakeObject{metadata: map[string]string{snapshot.MetadataUID: "uid-theirs"}}
		}, snapshot.ReasonArtifactExists, true},
		{"an object without our metadata", func(f *fakeS3) { f.objects["prod/nightly.db"] = fakeObject{} }, snapshot.ReasonArtifactExists, true},
		{"HEAD denied fails closed", func(f *fakeS3) { f.headObjectErr = responseError(http.StatusForbidden, "") }, snapshot.ReasonAccessDenied, true},
		{"missing bucket", func(f *fakeS3) { f.headBucketErr = responseError(http.StatusNotFound, "") }, snapshot.ReasonBucketNotFound, true},
		{"bucket denied", func(f *fakeS3) { f.headBucketErr = responseError(http.StatusForbidden, "") }, snapshot.ReasonAccessDenied, true},
	}
	for _, c := range cases {
		f := newFakeS3()
		c.setup(f)
		err := s3Dest(f, ourUID).Prepare(t.Context())
		if (err != nil) != c.refusing || snapshot.ReasonOf(err) != c.want {
			t.Errorf("%s: Prepare = %v, want reason %q", c.name, err, c.want)
		}
	}
}

func TestS3StoreWritesObjectMetadataAndSidecar(t *testing.T) {
	t.Parallel()
	f := newFakeS3()
	d := s3Dest(f, ourUID)
	body := streamOf(12<<20, 9) // three parts
	if err := d.Store(t.Context(), bytes.NewReader(body), artifactInfo{EtcdVersion: "3.6.16"}); err != nil {
		t.Fatal(err)
	}
	sum := [32]byte{1, 2, 3}
	if err := d.StoreChecksum(t.Context(), sum); err != nil {
		t.Fatal(err)
	}
	obj := f.objects["prod/nightly.db"]
	if !bytes.Equal(obj.data, body) || obj.metadata[snapshot.MetadataUID] != ourUID || obj.metadata[snapshot.MetadataVersion] != "3.6.16" {
		t.Errorf("object: %d bytes, metadata %v", len(obj.data), obj.metadata)
	}
	sidecar := f.objects["prod/nightly.db.sha256"]
	if string(sidecar.data) != string(snapshot.ChecksumFileContent(sum, "nightly.db")) || sidecar.metadata[snapshot.MetadataUID] != ourUID {
		t.Errorf("sidecar %q, metadata %v", sidecar.data, sidecar.metadata)
	}
	if d.URI() != "s3://etcd/prod/nightly.db" || f.maxPart != partSize {
		t.Errorf("URI %s, largest part %d", d.URI(), f.maxPart)
	}
}

func TestUploadMultipart(t *testing.T) {
	t.Parallel()
	const size = 10 // bytes per part in this test
	for _, n := range []int{0, 1, 9, 10, 11, 20, 35} {
		f := newFakeS3()
		body := bytes.Repeat([]byte("x"), n)
		err := uploadMultipart(t.Context(), f, multipartTarget{Bucket: "b", Key: "k", PartSize: size}, bytes.NewReader(body))
		if err != nil || !bytes.Equal(f.objects["k"].data, body) {
			t.Errorf("%d bytes: %v, stored %d bytes", n, err, len(f.objects["k"].data))
		}
	}
}

// TestUploadMultipartAborts: a failing body or a failing part aborts the upload, no object
// appears, and the error is the cause.
func TestUploadMultipartAborts(t *testing.T) {
	t.Parallel()
	f := newFakeS3()
	body := io.MultiReader(bytes.NewReader(make([]byte, 25)), errReader{snapshot.Fail(snapshot.ReasonSnapshotStreamFailed, errInjected)})
	err := uploadMultipart(t.Context(), f, multipartTarget{Bucket: "b", Key: "k", PartSize: 10}, body)
	if !errors.Is(err, errInjected) || snapshot.ReasonOf(err) != snapshot.ReasonSnapshotStreamFailed {
		t.Errorf("failing body: %v, want the body's error", err)
	}
	if _, ok := f.objects["k"]; ok || f.aborted != 1 || len(f.uploads) != 0 {
		t.Errorf("failing body: object stored %v, aborted %d, open uploads %d", ok, f.aborted, len(f.uploads))
	}

	g := newFakeS3()
	g.failPart = 2
	err = uploadMultipart(t.Context(), g, multipartTarget{Bucket: "b", Key: "k", PartSize: 10}, bytes.NewReader(make([]byte, 1000)))
	if snapshot.ReasonOf(err) != snapshot.ReasonAccessDenied {
		t.Errorf("failing part: %v, want AccessDenied", err)
	}
	if _, ok := g.objects["k"]; ok || g.aborted != 1 {
		t.Errorf("failing part: object stored %v, aborted %d", ok, g.aborted)
	}
}
