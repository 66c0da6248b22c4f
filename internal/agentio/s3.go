package agentio

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// s3DialTimeout bounds connecting to the store, as the etcd dial timeout does for etcd; the SDK's
// retries (3 attempts) come on top.
const s3DialTimeout = 10 * time.Second

// NewS3Client builds the client of store. It uses no shared AWS configuration (~/.aws, IMDS):
// the credentials the Pod was given are the only ones it may use. It returns the secret values
// read, for Redact.
func NewS3Client(store agentenv.S3Store) (*s3.Client, []string, error) {
	id, err := ReadCredential(store.AccessKeyID, snapshot.EnvS3CredentialsDir, false)
	if err != nil {
		return nil, nil, err
	}
	secret, err := ReadCredential(store.SecretAccessKey, snapshot.EnvS3CredentialsDir, false)
	if err != nil {
		return nil, nil, err
	}
	token, err := ReadCredential(store.SessionToken, snapshot.EnvS3CredentialsDir, true)
	if err != nil {
		return nil, nil, err
	}
	if id == "" || secret == "" {
		return nil, nil, snapshot.Failf(snapshot.ReasonInvalidConfig, "the S3 access key ID or secret access key is empty")
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if store.CAFile != "" {
		pool, _, err := ReadCAPool(store.CAFile, snapshot.EnvS3CAFile)
		if err != nil {
			return nil, nil, snapshot.Fail(snapshot.ReasonInvalidConfig, err)
		}
		tlsCfg.RootCAs = pool
	}
	httpClient := awshttp.NewBuildableClient().
		WithTransportOptions(func(t *http.Transport) { t.TLSClientConfig = tlsCfg }).
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = s3DialTimeout })
	client := s3.New(s3.Options{
		Region:       store.Region,
		BaseEndpoint: aws.String(store.Endpoint),
		UsePathStyle: store.ForcePathStyle,
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

// HTTPStatus is the HTTP status of an S3 error response, 0 for other errors.
func HTTPStatus(err error) int {
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

// S3Failure classifies an S3 error, prefixed with what was being done: a request that never
// got an answer is StoreUnreachable, a refusal AccessDenied, a missing bucket BucketNotFound,
// anything else StoreFailed.
func S3Failure(doing string, err error) error {
	reason := snapshot.ReasonStoreFailed
	apiErr, isAPI := errors.AsType[smithy.APIError](err)
	switch {
	case isAPI && apiErr.ErrorCode() == "NoSuchBucket":
		reason = snapshot.ReasonBucketNotFound
	case isAPI && s3DeniedCodes[apiErr.ErrorCode()], HTTPStatus(err) == http.StatusForbidden:
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
