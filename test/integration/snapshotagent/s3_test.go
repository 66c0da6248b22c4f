package snapshotagent_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"maps"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
	"github.com/etcd-operator/etcd-operator/test/utils/s3server"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
)

// s3Env is the environment of a snapshot of c into bucket on srv, under the prefix prod/etcd/.
func s3Env(c *etcdproc.Cluster, srv *s3server.Server, bucket, name, uid string) map[string]string {
	return map[string]string{
		snapshot.EnvEndpoints:          strings.Join(c.Endpoints(), ","),
		snapshot.EnvSnapshotName:       name,
		snapshot.EnvSnapshotUID:        uid,
		snapshot.EnvDestination:        snapshot.DestinationS3,
		snapshot.EnvS3Endpoint:         srv.Endpoint,
		snapshot.EnvS3Bucket:           bucket,
		snapshot.EnvS3Key:              "prod/etcd/",
		snapshot.EnvS3ForcePathStyle:   "true",
		agentenv.EnvAWSAccessKeyID:     srv.AccessKey,
		agentenv.EnvAWSSecretAccessKey: srv.SecretKey,
	}
}

// object downloads an object; its metadata and ETag come along.
func object(ctx context.Context, t *testing.T, srv *s3server.Server, bucket, key string) ([]byte, *s3.GetObjectOutput) {
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
	return data, out
}

// checkS3Artifact checks the object and its sidecar against the agent's result, and the
// object with etcdutl; it returns the object's ETag.
func checkS3Artifact(ctx context.Context, t *testing.T, srv *s3server.Server, bucket, name string, res snapshot.Result) string {
	t.Helper()
	key := "prod/etcd/" + snapshot.ArtifactFileName(name)
	if want := "s3://" + bucket + "/" + key; res.URI != want {
		t.Errorf("URI %s, want %s", res.URI, want)
	}
	data, out := object(ctx, t, srv, bucket, key)
	sum := sha256.Sum256(data)
	if res.Checksum != snapshot.FormatChecksum(sum) || res.SizeBytes != int64(len(data)) {
		t.Errorf("result says %s, %d bytes; the object is %s, %d bytes", res.Checksum, res.SizeBytes, snapshot.FormatChecksum(sum), len(data))
	}
	if out.Metadata[snapshot.MetadataVersion] != res.EtcdVersion || out.Metadata[snapshot.MetadataUID] == "" {
		t.Errorf("object metadata %v", out.Metadata)
	}
	sidecar, _ := object(ctx, t, srv, bucket, key+snapshot.ChecksumSuffix)
	if string(sidecar) != string(snapshot.ChecksumFileContent(sum, snapshot.ArtifactFileName(name))) {
		t.Errorf("sidecar %q", sidecar)
	}
	file := filepath.Join(t.TempDir(), snapshot.ArtifactFileName(name))
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if st := snapshotStatus(t, "3.6", file); st.Revision != res.Revision {
		t.Errorf("etcdutl says revision %d, the agent %d", st.Revision, res.Revision)
	}
	return aws.ToString(out.ETag)
}

// TestSnapshotToS3 streams a snapshot of more than two parts into a real S3 server (SeaweedFS)
// and checks the object, its metadata and its sidecar; then the overwrite guard (a retry
// replaces its own object, another snapshot is refused), and the failures that need a person:
// a wrong secret, a missing bucket, an endpoint that is down.
func TestSnapshotToS3(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	srv := s3server.StartForTest(t, s3server.Options{})
	c := startCluster(ctx, t, "3.6", etcdproc.Options{})
	cli := client(t, c, "", "")
	writeLarge(ctx, t, cli, 12<<20)
	bucket := srv.CreateBucketForTest(t)

	code, res := agentrun.Snapshot(ctx, t, s3Env(c, srv, bucket, "nightly", "uid-1"))
	if code != 0 {
		t.Fatalf("snapshot to S3: %+v", res)
	}
	if res.SizeBytes <= 2*5<<20 {
		t.Fatalf("the snapshot is %d bytes: too small for three parts", res.SizeBytes)
	}
	first := checkS3Artifact(ctx, t, srv, bucket, "nightly", res)
	// S3 names a multipart object's ETag after its parts: "<md5 of part md5s>-<parts>".
	if !strings.HasSuffix(strings.Trim(first, `"`), "-3") {
		t.Errorf("ETag %s: want an object assembled from 3 parts", first)
	}

	if _, err := cli.Put(ctx, "more", "data"); err != nil {
		t.Fatal(err)
	}
	code, retried := agentrun.Snapshot(ctx, t, s3Env(c, srv, bucket, "nightly", "uid-1"))
	if code != 0 || retried.Revision <= res.Revision {
		t.Fatalf("retry of the same snapshot: exit %d, %+v", code, retried)
	}
	kept := checkS3Artifact(ctx, t, srv, bucket, "nightly", retried)

	code, refused := agentrun.Snapshot(ctx, t, s3Env(c, srv, bucket, "nightly", "uid-2"))
	if code != snapshot.ExitPermanent || refused.Reason != snapshot.ReasonArtifactExists || !strings.Contains(refused.Message, "uid-1") {
		t.Errorf("another snapshot: exit %d, %+v; want ArtifactExists naming uid-1", code, refused)
	}
	if checkS3Artifact(ctx, t, srv, bucket, "nightly", retried) != kept {
		t.Error("the refused snapshot changed the object")
	}
	checkS3Failures(ctx, t, c, srv, bucket)
}

// checkS3Failures runs the agent against bucket with each thing a person must fix broken in
// turn, and checks the reason, that no secret is shown and that no object is stored.
func checkS3Failures(ctx context.Context, t *testing.T, c *etcdproc.Cluster, srv *s3server.Server, bucket string) {
	t.Helper()
	failures := map[string]struct {
		edit func(env map[string]string)
		want snapshot.Reason
	}{
		"wrong secret":   {func(env map[string]string) { env[agentenv.EnvAWSSecretAccessKey] = "wrong-secret" }, snapshot.ReasonAccessDenied},
		"unknown key":    {func(env map[string]string) { env[agentenv.EnvAWSAccessKeyID] = "AKIDUNKNOWN" }, snapshot.ReasonAccessDenied},
		"missing bucket": {func(env map[string]string) { env[snapshot.EnvS3Bucket] = "no-such-bucket" }, snapshot.ReasonBucketNotFound},
		"endpoint down":  {func(env map[string]string) { env[snapshot.EnvS3Endpoint] = "http://" + closedAddress(t) }, snapshot.ReasonStoreUnreachable},
	}
	for name, f := range failures {
		env := s3Env(c, srv, bucket, "failing-"+strings.ReplaceAll(name, " ", "-"), "uid-f")
		f.edit(env)
		code, res := agentrun.Snapshot(ctx, t, env)
		if res.Reason != f.want || code != f.want.ExitCode() {
			t.Errorf("%s: exit %d, %+v; want %s", name, code, res, f.want)
		}
		if strings.Contains(res.Message, "wrong-secret") || strings.Contains(res.Message, srv.SecretKey) {
			t.Errorf("%s: the message shows a secret: %s", name, res.Message)
		}
		key := "prod/etcd/" + snapshot.ArtifactFileName(env[snapshot.EnvSnapshotName])
		if _, err := srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key}); err == nil {
			t.Errorf("%s: an object was stored", name)
		}
	}
}

// closedAddress is a loopback address nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestSnapshotToS3OverTLSWithPrivateCA puts an HTTPS proxy with a certificate from a private CA
// in front of the S3 server: the agent stores through it with the CA bundle from
// SNAPSHOT_S3_CA_FILE and the credentials from a mounted Secret's folder, and without the
// bundle fails with StoreUnreachable (the handshake is refused).
func TestSnapshotToS3OverTLSWithPrivateCA(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	srv := s3server.StartForTest(t, s3server.Options{})
	c := startCluster(ctx, t, "3.6", etcdproc.Options{})
	if _, err := client(t, c, "", "").Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	bucket := srv.CreateBucketForTest(t)
	endpoint, caFile := tlsProxy(t, srv.Endpoint)

	creds := t.TempDir()
	for name, value := range map[string]string{agentenv.EnvAWSAccessKeyID: srv.AccessKey, agentenv.EnvAWSSecretAccessKey: srv.SecretKey} {
		if err := os.WriteFile(filepath.Join(creds, name), []byte(value), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := s3Env(c, srv, bucket, "private-ca", "uid-tls")
	delete(env, agentenv.EnvAWSAccessKeyID)
	delete(env, agentenv.EnvAWSSecretAccessKey)
	env[snapshot.EnvS3CredentialsDir] = creds
	env[snapshot.EnvS3Endpoint] = endpoint
	untrusted := maps.Clone(env)
	env[snapshot.EnvS3CAFile] = caFile

	code, res := agentrun.Snapshot(ctx, t, env)
	if code != 0 {
		t.Fatalf("snapshot over TLS with a private CA: %+v", res)
	}
	checkS3Artifact(ctx, t, srv, bucket, "private-ca", res)

	untrusted[snapshot.EnvSnapshotName] = "untrusted"
	if code, res := agentrun.Snapshot(ctx, t, untrusted); res.Reason != snapshot.ReasonStoreUnreachable || code != snapshot.ExitTransient {
		t.Errorf("without the CA bundle: exit %d, %+v; want StoreUnreachable", code, res)
	}
}

// tlsProxy serves backend over HTTPS on 127.0.0.1 with a certificate from a fresh CA and
// returns its URL and a file holding the CA. The proxy keeps the Host header the client signed.
func tlsProxy(t *testing.T, backend string) (string, string) {
	t.Helper()
	ca, err := testpki.NewCA("s3-proxy-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(testpki.Leaf{CommonName: "s3-proxy", IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, Usages: testpki.Both})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	server := httptest.NewUnstartedServer(proxy)
	server.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	server.Config.ErrorLog = nil
	server.StartTLS()
	t.Cleanup(server.Close)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return server.URL, caFile
}
