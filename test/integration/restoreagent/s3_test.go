package restoreagent_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/s3server"
)

// s3Env restores key from bucket on srv, with the credentials in a folder as the mounted
// Secret provides them.
func (tg *target) s3Env(t *testing.T, srv *s3server.Server, bucket, key string) map[string]string {
	t.Helper()
	creds := t.TempDir()
	for name, value := range map[string]string{agentenv.EnvAWSAccessKeyID: srv.AccessKey, agentenv.EnvAWSSecretAccessKey: srv.SecretKey + "\n"} {
		if err := os.WriteFile(filepath.Join(creds, name), []byte(value), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := tg.env()
	env[restore.EnvSource] = restore.SourceS3
	env[restore.EnvS3Endpoint] = srv.Endpoint
	env[restore.EnvS3Bucket] = bucket
	env[restore.EnvS3Key] = key
	env[restore.EnvS3ForcePathStyle] = "true"
	env[restore.EnvS3CredentialsDir] = creds
	return env
}

// TestRestoreFromS3 restores a snapshot the snapshot agent stored in a real S3 server: the
// object's metadata gives the version, its sidecar object the checksum, and the restored etcd
// holds the source's keyspace at the snapshot's revision. Then the failures a person must fix,
// each with its reason and no member/ written: a tampered object, a missing key, a wrong
// secret, a missing bucket, and a 3.6 object restored into 3.5.
func TestRestoreFromS3(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	srv := s3server.StartForTest(t, s3server.Options{})
	bucket := srv.CreateBucketForTest(t)
	src := startSource(ctx, t, "3.6")
	snap := takeSnapshot(ctx, t, map[string]string{
		snapshot.EnvEndpoints: strings.Join(src.c.Endpoints(), ","), snapshot.EnvSnapshotName: "nightly", snapshot.EnvSnapshotUID: "uid-1",
		snapshot.EnvDestination: snapshot.DestinationS3, snapshot.EnvS3Endpoint: srv.Endpoint, snapshot.EnvS3Bucket: bucket,
		snapshot.EnvS3Key: "prod/etcd", snapshot.EnvS3ForcePathStyle: "true",
		agentenv.EnvAWSAccessKeyID: srv.AccessKey, agentenv.EnvAWSSecretAccessKey: srv.SecretKey,
	})
	src.writeAfter(ctx, t)
	key := "prod/etcd/nightly.db"

	tg := newTarget(t, "3.6")
	code, res := agentrun.Restore(ctx, t, tg.s3Env(t, srv, bucket, key))
	want := restore.Result{Outcome: restore.OutcomeRestored, URI: snap.URI, SizeBytes: snap.SizeBytes, Checksum: snap.Checksum,
		Verification: restore.VerifiedBySidecar, SnapshotVersion: snap.EtcdVersion}
	if code != 0 || res != want {
		t.Fatalf("restore from S3: exit %d, %+v; want %+v", code, res, want)
	}
	sameKeyspace(ctx, t, src, tg.start(ctx, t, src), snap.Revision)

	// A copy of the object with one byte flipped, next to the original's sidecar.
	data := download(ctx, t, srv, bucket, key)
	data[len(data)/2] ^= 0xff
	upload(ctx, t, srv, bucket, "tampered/nightly.db", data, map[string]string{snapshot.MetadataVersion: snap.EtcdVersion})
	upload(ctx, t, srv, bucket, "tampered/nightly.db.sha256", download(ctx, t, srv, bucket, key+snapshot.ChecksumSuffix), nil)
	upload(ctx, t, srv, bucket, "newer/nightly.db", download(ctx, t, srv, bucket, key), map[string]string{snapshot.MetadataVersion: "3.6.16"})

	for name, c := range map[string]struct {
		minor, key string
		edit       func(env map[string]string)
		reason     snapshot.Reason
	}{
		"tampered":       {key: "tampered/nightly.db", reason: restore.ReasonChecksumMismatch},
		"missing key":    {key: "prod/etcd/weekly.db", reason: restore.ReasonArtifactNotFound},
		"wrong secret":   {key: key, reason: snapshot.ReasonAccessDenied, edit: wrongSecret(t)},
		"missing bucket": {key: key, reason: snapshot.ReasonBucketNotFound, edit: func(env map[string]string) { env[restore.EnvS3Bucket] = "no-such-bucket" }},
		"newer minor":    {minor: "3.5", key: "newer/nightly.db", reason: restore.ReasonVersionTooNew},
	} {
		if c.minor == "" {
			c.minor = "3.6"
		}
		tg := newTarget(t, c.minor)
		env := tg.s3Env(t, srv, bucket, c.key)
		if c.edit != nil {
			c.edit(env)
		}
		code, res := agentrun.Restore(ctx, t, env)
		if res.Reason != c.reason || code != restore.ExitCode(c.reason) {
			t.Errorf("%s: exit %d, %+v; want %s", name, code, res, c.reason)
		}
		if strings.Contains(res.Message, srv.SecretKey) || strings.Contains(res.Message, "wrong-secret") {
			t.Errorf("%s: the message shows a secret: %s", name, res.Message)
		}
		tg.noMember(t)
	}
}

// wrongSecret replaces the mounted secret access key.
func wrongSecret(t *testing.T) func(env map[string]string) {
	t.Helper()
	return func(env map[string]string) {
		if err := os.WriteFile(filepath.Join(env[restore.EnvS3CredentialsDir], agentenv.EnvAWSSecretAccessKey), []byte("wrong-secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func download(ctx context.Context, t *testing.T, srv *s3server.Server, bucket, key string) []byte {
	t.Helper()
	out, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	defer func() { _ = out.Body.Close() }()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func upload(ctx context.Context, t *testing.T, srv *s3server.Server, bucket, key string, data []byte, meta map[string]string) {
	t.Helper()
	if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data), Metadata: meta}); err != nil {
		t.Fatalf("PutObject %s: %v", key, err)
	}
}
