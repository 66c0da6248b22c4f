package snapshotagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
)

// multipartAPI is the part of the S3 client a multipart upload uses.
type multipartAPI interface {
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

const (
	// partSize is S3's minimum part size (every part but the last must reach it). Small parts
	// keep the agent's memory small; with S3's limit of 10,000 parts they still allow an
	// artifact of 48 GiB, six times etcd's largest supported database.
	partSize = 5 << 20
	// partBuffers is how many parts are held at once: one being read from etcd while the
	// other is uploaded, so that neither side waits for the other.
	partBuffers = 2
	// abortTimeout bounds aborting a failed upload, which runs even when the agent was asked
	// to stop: parts of an upload never completed or aborted are kept (and billed) by S3.
	abortTimeout = 30 * time.Second
)

// multipartTarget is the object a multipart upload creates.
type multipartTarget struct {
	Bucket, Key string
	Metadata    map[string]string
	PartSize    int
}

// part is one chunk of the body on its way to UploadPart.
type part struct {
	number int32
	data   []byte
}

// uploadMultipart streams body into a new object with bounded memory (partBuffers parts of
// PartSize). The object appears only when the upload completes; on any failure, of body or of
// S3, the upload is aborted.
func uploadMultipart(ctx context.Context, api multipartAPI, t multipartTarget, body io.Reader) error {
	created, err := api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: &t.Bucket, Key: &t.Key, Metadata: t.Metadata, ContentType: aws.String("application/octet-stream"),
	})
	if err != nil {
		return agentio.S3Failure("starting the upload", err)
	}
	u := &multipartUpload{api: api, target: t, id: created.UploadId}
	completed, err := u.sendParts(ctx, body)
	if err == nil {
		_, err = api.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: &t.Bucket, Key: &t.Key, UploadId: u.id,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: completed},
		})
		if err != nil {
			err = agentio.S3Failure("completing the upload", err)
		}
	}
	if err != nil {
		u.abort(ctx)
	}
	return err
}

type multipartUpload struct {
	api    multipartAPI
	target multipartTarget
	id     *string
}

// sendParts reads body part by part and hands each to one uploading goroutine. Buffers go
// round between the two, so memory stays at partBuffers parts whatever the body's size. The
// first failure on either side cancels the other.
func (u *multipartUpload) sendParts(ctx context.Context, body io.Reader) ([]types.CompletedPart, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	free := make(chan []byte, partBuffers)
	for range partBuffers {
		free <- make([]byte, u.target.PartSize)
	}
	full := make(chan part)
	var completed []types.CompletedPart
	uploaded := make(chan error, 1)
	go func() {
		err := u.uploadParts(ctx, full, free, &completed)
		if err != nil {
			cancel() // readParts waits on ctx as well as on free and full
		}
		uploaded <- err
	}()
	readErr := u.readParts(ctx, body, free, full)
	if readErr != nil {
		cancel()
	}
	close(full)
	uploadErr := <-uploaded
	switch {
	// body's own failure is the cause whatever the uploader saw after it; a read that ended
	// in context.Canceled stopped because the uploader failed, or because the caller gave up.
	case readErr != nil && !errors.Is(readErr, context.Canceled):
		return nil, readErr
	case uploadErr != nil:
		return nil, uploadErr
	case readErr != nil:
		return nil, readErr
	}
	return completed, nil
}

// readParts fills free buffers from body and sends them on full until body ends.
func (u *multipartUpload) readParts(ctx context.Context, body io.Reader, free <-chan []byte, full chan<- part) error {
	for number := int32(1); ; number++ {
		var buf []byte
		select {
		case buf = <-free:
		case <-ctx.Done():
			return ctx.Err()
		}
		n, err := io.ReadFull(body, buf)
		last := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !last {
			return err
		}
		// A body that ends exactly at a part boundary needs no empty part, except as the
		// only one.
		if n > 0 || number == 1 {
			select {
			case full <- part{number: number, data: buf[:n]}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if last {
			return nil
		}
	}
}

// uploadParts uploads the parts it receives in order and returns each buffer to free.
func (u *multipartUpload) uploadParts(ctx context.Context, full <-chan part, free chan<- []byte, completed *[]types.CompletedPart) error {
	for p := range full {
		out, err := u.api.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: &u.target.Bucket, Key: &u.target.Key, UploadId: u.id,
			PartNumber: aws.Int32(p.number), Body: bytes.NewReader(p.data), ContentLength: aws.Int64(int64(len(p.data))),
		})
		if err != nil {
			return agentio.S3Failure(fmt.Sprintf("uploading part %d", p.number), err)
		}
		*completed = append(*completed, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(p.number)})
		free <- p.data[:cap(p.data)]
	}
	return nil
}

// abort discards the upload's parts. Its failure is not reported: the upload's own error is the
// one that matters, and a bucket lifecycle rule can expire what remains.
func (u *multipartUpload) abort(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_, _ = u.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &u.target.Bucket, Key: &u.target.Key, UploadId: u.id})
}
