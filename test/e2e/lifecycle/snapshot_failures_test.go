//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestSnapshotFailuresOnTheCluster: each way a snapshot fails on a real cluster, with a real S3
// server and a real (small) filesystem, ends Failed with its own reason and a message, and
// leaves nothing behind (docs/backup-restore.md, "Reasons"):
//   - a missing bucket: BucketNotFound;
//   - a wrong secret key: AccessDenied (the store refused; nothing is written);
//   - an endpoint nobody listens on: StoreUnreachable, after the Job's retries;
//   - an object the user put at the destination: ArtifactExists, the object untouched;
//   - a PVC with less room than the database: NoSpace, before anything is streamed;
//   - a paused cluster: ClusterPaused, without a Job.
func TestSnapshotFailuresOnTheCluster(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	volumes := f.RequireVolumes()
	srv := f.S3()
	bucket := srv.CreateBucketForTest(t)
	createS3Credentials(f, "good", srv.AccessKey, srv.SecretKey)
	createS3Credentials(f, "wrong", srv.AccessKey, "not-the-secret")
	const name = "sfail"
	createCluster(f, newCluster(f, name, 1))
	waitConverged(f, name, 1, bootstrapTimeout)
	cli, _ := dialVoters(f, name)
	for i := range 16 { // about 1 MiB: more than the small folder below holds
		if _, err := cli.Put(f.Ctx, fmt.Sprintf("big/%02d", i), strings.Repeat("x", 64<<10)); err != nil {
			t.Fatal(err)
		}
	}
	userObject := []byte("the user's own object")
	srv.PutObjectForTest(t, bucket, "e2e/exists.db", userObject)
	down := s3Location(srv, bucket, "e2e", "good")
	down.Endpoint = fmt.Sprintf("http://%s:1", cluster.ControlPlaneIP)
	noBucket := s3Location(srv, "no-such-bucket", "e2e", "good")
	want := map[string]string{
		"nobucket": string(snapshot.ReasonBucketNotFound),
		"badcreds": string(snapshot.ReasonAccessDenied),
		"down":     string(snapshot.ReasonStoreUnreachable),
		"exists":   string(snapshot.ReasonArtifactExists),
		"full":     string(snapshot.ReasonNoSpace),
		"paused":   backup.ReasonClusterPaused,
	}
	createSnapshot(f, "nobucket", name, etcdv1alpha2.SnapshotLocation{S3: noBucket})
	createSnapshot(f, "badcreds", name, etcdv1alpha2.SnapshotLocation{S3: s3Location(srv, bucket, "e2e", "wrong")})
	createSnapshot(f, "down", name, etcdv1alpha2.SnapshotLocation{S3: down})
	createSnapshot(f, "exists", name, etcdv1alpha2.SnapshotLocation{S3: s3Location(srv, bucket, "e2e", "good")})
	fullFolder := filepath.Join(smallFolderOnClaim(f, volumes, "tiny"), "full")
	createSnapshot(f, "full", name, etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "tiny", SubPath: "full"}})

	for _, snap := range []string{"nobucket", "badcreds", "exists", "full", "down"} {
		requireSnapshotFailed(f, snap, want[snap])
	}
	if body, _ := srv.ObjectForTest(t, bucket, "e2e/exists.db"); !slices.Equal(body, userObject) {
		t.Errorf("the user's object at the destination became %q", body)
	}
	if entries, err := os.ReadDir(fullFolder); err != nil || len(entries) > 1 {
		t.Errorf("the full folder holds %v (%v), want at most the name's claim (.uid)", entries, err)
	}

	setReplicas(f, name, 0)
	waitCondition(f, name, etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse, "Paused", scaleTimeout)
	createSnapshot(f, "paused", name, etcdv1alpha2.SnapshotLocation{S3: s3Location(srv, bucket, "e2e", "good")})
	requireSnapshotFailed(f, "paused", want["paused"])
	if jobs, err := f.Kube.BatchV1().Jobs(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: etcdv1alpha2.LabelSnapshot + "=paused"}); err != nil || len(jobs.Items) != 0 {
		t.Errorf("a paused cluster's snapshot made %d Jobs (%v), want none", len(jobs.Items), err)
	}
}

// smallFolderOnClaim creates a claim bound to a free local PV chosen here and mounts a 256 KiB
// tmpfs over that PV's folder, before any Pod uses it, and returns the folder; the mount is
// removed when the test ends. A PVC with less room than the cluster's database.
func smallFolderOnClaim(f *framework.Test, volumes framework.Volumes, claim string) string {
	f.T.Helper()
	pvs, err := f.Kube.CoreV1().PersistentVolumes().List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	var free []string
	for _, pv := range pvs.Items {
		if pv.Spec.StorageClassName == "local" && pv.Status.Phase == corev1.VolumeAvailable && pv.Spec.ClaimRef == nil && pv.Spec.Local != nil {
			free = append(free, pv.Name)
		}
	}
	if len(free) == 0 {
		f.T.Fatal("no Available local PV to put a small filesystem on")
	}
	slices.Sort(free) // the highest name: the PV controller binds other claims from the lowest
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: f.Namespace}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: free[len(free)-1], StorageClassName: ptr.To("local"),
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := kc(f).Create(f.Ctx, pvc); err != nil {
		f.T.Fatalf("creating PVC %s: %v", claim, err)
	}
	folder, err := volumes.PVCHostPath(f.Ctx, f.Namespace, claim)
	if err != nil {
		f.T.Fatal(err)
	}
	if err := unix.Mount("tmpfs", folder, "tmpfs", 0, "size=256k,mode=0777"); err != nil {
		f.T.Fatalf("mounting a small tmpfs on %s: %v", folder, err)
	}
	f.T.Cleanup(func() {
		if err := unix.Unmount(folder, unix.MNT_DETACH); err != nil {
			f.T.Errorf("unmounting %s: %v", folder, err)
		}
	})
	return folder
}

// requireSnapshotFailed waits until snapshot name is final and checks it Failed with reason and
// a message.
func requireSnapshotFailed(f *framework.Test, name, reason string) {
	f.T.Helper()
	snap := waitSnapshotFinal(f, name)
	c := meta.FindStatusCondition(snap.Status.Conditions, etcdv1alpha2.ConditionReady)
	if snap.Status.Phase != etcdv1alpha2.SnapshotPhaseFailed || c == nil || c.Reason != reason || c.Message == "" {
		f.T.Errorf("snapshot %s: phase %s, Ready %+v; want Failed/%s with a message", name, snap.Status.Phase, c, reason)
		return
	}
	f.T.Logf("snapshot %s: Failed/%s: %s", name, c.Reason, c.Message)
}

// TestSnapshotSurvivesOperatorRestart kills the operator (SIGKILL) right after it created a
// snapshot's Job, before the agent ran (docs/backup-restore.md, "How a snapshot is taken"): the
// restarted operator adopts the running Job instead of starting another, the snapshot completes,
// and the claim holds exactly one artifact with its siblings.
//
// Not parallel: it kills the one operator every other scenario depends on.
func TestSnapshotSurvivesOperatorRestart(t *testing.T) {
	f := framework.NewTest(t, framework.Disruptive)
	requireOperator(f)
	volumes := f.RequireVolumes()
	const name = "srestart"
	createCluster(f, newCluster(f, name, 1))
	waitConverged(f, name, 1, bootstrapTimeout)
	createClaim(f, "backups")
	snap := createSnapshot(f, "mid", name, etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "e2e"}})
	if err := f.Poll("the snapshot's Job", snapshotTimeout, func(ctx context.Context) (bool, string, error) {
		jobs, err := f.Kube.BatchV1().Jobs(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: etcdv1alpha2.LabelSnapshot + "=" + snap.Name})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(jobs.Items) == 1 && jobs.Items[0].Status.Succeeded == 0, fmt.Sprintf("%d Jobs", len(jobs.Items)), nil
	}); err != nil {
		t.Fatal(err)
	}
	killOperator(f)
	if snap = waitSnapshotFinal(f, snap.Name); snap.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete {
		t.Fatalf("snapshot ended %s: %+v", snap.Status.Phase, meta.FindStatusCondition(snap.Status.Conditions, etcdv1alpha2.ConditionReady))
	}
	dir, err := volumes.PVCHostPath(f.Ctx, f.Namespace, "backups")
	if err != nil {
		t.Fatal(err)
	}
	requireArtifact(f, filepath.Join(dir, "e2e"), snap)
	entries, err := os.ReadDir(filepath.Join(dir, "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"mid.db", "mid.db.sha256", "mid.db.uid", "mid.db.version"}; !slices.Equal(names, want) {
		t.Errorf("the claim's folder holds %v, want exactly %v", names, want)
	}
	jobs, err := f.Kube.BatchV1().Jobs(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: etcdv1alpha2.LabelSnapshot + "=" + snap.Name})
	if err != nil || len(jobs.Items) != 1 || jobs.Items[0].Status.Succeeded != 1 {
		t.Errorf("Jobs of the snapshot: %d (%v), want exactly the one that succeeded", len(jobs.Items), err)
	}
}
