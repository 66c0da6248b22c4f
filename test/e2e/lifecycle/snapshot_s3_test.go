//go:build e2e

package lifecycle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/s3server"
)

// TestSnapshotToS3AndRestore takes an EtcdSnapshot of a 3-member cluster under write traffic to a
// real S3 server on the cluster's host (docs/backup-restore.md), restores it into a new 3-member
// cluster, and then restores a tampered copy (docs/backup-restore.md, "Restore"):
//   - the object and its .sha256 sidecar hold the size and SHA-256 the status reports, and the
//     object's metadata names the snapshot's UID (the overwrite guard's mark);
//   - no acknowledged write is lost while the snapshot streams;
//   - the restored cluster has a new cluster ID and exactly the keys, values and modification
//     revisions the source held at the snapshot's revision, with no checksum in its spec (the
//     sidecar is the reference);
//   - a copy with one byte changed is refused: Available=False/RestoreFailed naming the checksum
//     mismatch, and no cluster ID is latched.
func TestSnapshotToS3AndRestore(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	srv := f.S3()
	bucket := srv.CreateBucketForTest(t)
	createS3Credentials(f, "s3-creds", srv.AccessKey, srv.SecretKey)
	const src, dst, bad = "s3src", "s3dst", "s3bad"
	createCluster(f, newCluster(f, src, 3))
	source := waitConverged(f, src, 3, bootstrapTimeout)
	load := startLoad(f, src)
	srcCli, _ := dialVoters(f, src)
	putKeys(f, srcCli, "s3/", 100)
	waitAcked(f, load.gen, 200)

	start := time.Now()
	snap := createSnapshot(f, "nightly", src, etcdv1alpha2.SnapshotLocation{S3: s3Location(srv, bucket, "e2e", "s3-creds")})
	if snap = waitSnapshotFinal(f, snap.Name); snap.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete {
		t.Fatalf("snapshot ended %s: %+v", snap.Status.Phase, meta.FindStatusCondition(snap.Status.Conditions, etcdv1alpha2.ConditionReady))
	}
	f.Record("snapshot-s3", since(start), "EtcdSnapshot created → Complete (Job, 3 members under traffic, S3 on the host)")
	load.verify(f, "writes while a snapshot streamed to S3")
	const key = "e2e/nightly.db"
	body := requireS3Artifact(f, srv, bucket, key, snap)
	requireLastSnapshot(f, src, snap)
	requireSnapshotPodsUnlabelled(f, snap.Name)

	start = time.Now()
	ec := newCluster(f, dst, 3)
	ec.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{
		Source: etcdv1alpha2.SnapshotLocation{S3: s3Location(srv, bucket, key, "s3-creds")}}}
	createCluster(f, ec)
	restored := waitConverged(f, dst, 3, bootstrapTimeout)
	f.Record("restore-3-from-s3", since(start), "EtcdCluster with bootstrap.restore from S3 created → 3 members converged")
	requireRestoredFrom(f, srcCli, source, restored, snap)

	tampered := bytes.Clone(body)
	tampered[len(tampered)/2] ^= 0xff
	srv.PutObjectForTest(t, bucket, key, tampered)
	ec = newCluster(f, bad, 1)
	ec.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{
		Source: etcdv1alpha2.SnapshotLocation{S3: s3Location(srv, bucket, key, "s3-creds")}}}
	createCluster(f, ec)
	refused := waitCondition(f, bad, etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse, membership.ReasonRestoreFailed, bootstrapTimeout)
	if c := findCond(refused, etcdv1alpha2.ConditionAvailable); !strings.Contains(c.Message, string(restore.ReasonChecksumMismatch)) {
		t.Errorf("Available=False/RestoreFailed says %q, want it to name %s", c.Message, restore.ReasonChecksumMismatch)
	}
	if refused.Status.ClusterID != "" {
		t.Errorf("cluster ID %s latched although the restore was refused", refused.Status.ClusterID)
	}
}

// createS3Credentials creates the Secret that S3 locations name in credentialsSecretRef.
func createS3Credentials(f *framework.Test, name, accessKey, secretKey string) {
	f.T.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey}}
	if _, err := f.Kube.CoreV1().Secrets(f.Namespace).Create(f.Ctx, s, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating Secret %s: %v", name, err)
	}
}

// s3Location is a location on srv, path-style as SeaweedFS needs.
func s3Location(srv *s3server.Server, bucket, key, secret string) *etcdv1alpha2.S3SnapshotLocation {
	return &etcdv1alpha2.S3SnapshotLocation{Endpoint: srv.Endpoint, Bucket: bucket, Key: key, ForcePathStyle: true,
		CredentialsSecretRef: corev1.LocalObjectReference{Name: secret}}
}

// createSnapshot creates an EtcdSnapshot of cluster to dest.
func createSnapshot(f *framework.Test, name, cluster string, dest etcdv1alpha2.SnapshotLocation) *etcdv1alpha2.EtcdSnapshot {
	f.T.Helper()
	snap := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}, Destination: dest}}
	if err := kc(f).Create(f.Ctx, snap); err != nil {
		f.T.Fatalf("creating EtcdSnapshot %s: %v", name, err)
	}
	return snap
}

// requireS3Artifact checks the object at bucket/key against the snapshot's status (size,
// SHA-256, URI), its metadata (the snapshot's UID) and its sidecar, and returns its body.
func requireS3Artifact(f *framework.Test, srv *s3server.Server, bucket, key string, snap *etcdv1alpha2.EtcdSnapshot) []byte {
	f.T.Helper()
	body, metadata := srv.ObjectForTest(f.T, bucket, key)
	sum := sha256.Sum256(body)
	hexSum := hex.EncodeToString(sum[:])
	a := snap.Status.Artifact
	if a == nil || int64(len(body)) != a.SizeBytes || a.Checksum != "sha256:"+hexSum || a.Revision <= 0 || a.URI != fmt.Sprintf("s3://%s/%s", bucket, key) {
		f.T.Errorf("object %s/%s: %d bytes, sha256 %s; status.artifact %+v", bucket, key, len(body), hexSum, a)
	}
	if got := metadata[snapshot.MetadataUID]; got != string(snap.UID) {
		f.T.Errorf("object metadata %s = %q, want the snapshot's UID %s (all metadata: %v)", snapshot.MetadataUID, got, snap.UID, metadata)
	}
	sidecar, _ := srv.ObjectForTest(f.T, bucket, key+".sha256")
	if !strings.HasPrefix(string(sidecar), hexSum) {
		f.T.Errorf("sidecar %s.sha256 = %q, want the object's sum %s", key, sidecar, hexSum)
	}
	return body
}
