//go:build e2e

package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
)

// snapshotTimeout bounds one snapshot of a small cluster: a Job scheduled, its image present,
// a few MiB streamed.
const snapshotTimeout = 3 * time.Minute

// TestSnapshotToPVCUnderTraffic takes an EtcdSnapshot to a PVC of a plaintext cluster and of an
// operator-managed mTLS + auth cluster, each under write traffic (docs/backup-restore.md): the
// snapshot completes through its Job, the file on the claim has the size and SHA-256 the status
// reports and its sidecars say the same, the cluster's status.lastSnapshot names it, the Job's
// Pod never carried the cluster's label, and no acknowledged write is lost.
func TestSnapshotToPVCUnderTraffic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		secure bool
	}{{"plaintext", false}, {"mtls-auth", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := framework.NewTest(t)
			requireOperator(f)
			volumes := f.RequireVolumes()
			name := "snap-" + tc.name
			ec := newCluster(f, name, 3)
			if tc.secure {
				createPasswordSecret(f, name+"-root", "e2e-Snapshot-Pw-5t8w")
				ec.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}}
				ec.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: name + "-root"}}
			}
			createCluster(f, ec)
			if tc.secure {
				registerManagedAccess(f, name)
			}
			waitConverged(f, name, 3, bootstrapTimeout)
			if tc.secure {
				waitAuthLatched(f, name)
			}
			load := startLoad(f, name)
			waitAcked(f, load.gen, 100)
			createClaim(f, "backups")

			start := time.Now()
			snap := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: f.Namespace},
				Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: name},
					Destination: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "e2e"}}}}
			if err := kc(f).Create(f.Ctx, snap); err != nil {
				t.Fatal(err)
			}
			snap = waitSnapshotFinal(f, snap.Name)
			f.Record("snapshot-pvc-"+tc.name, since(start), "EtcdSnapshot created → Complete (Job, 3 members under traffic)")
			if snap.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete {
				t.Fatalf("snapshot ended %s: %+v", snap.Status.Phase, meta.FindStatusCondition(snap.Status.Conditions, etcdv1alpha2.ConditionReady))
			}
			dir, err := volumes.PVCHostPath(f.Ctx, f.Namespace, "backups")
			if err != nil {
				t.Fatal(err)
			}
			f.RecordBytes("snapshot-size", requireArtifact(f, filepath.Join(dir, "e2e"), snap), "a snapshot of 3 members after 100+ writes")
			requireLastSnapshot(f, name, snap)
			requireSnapshotPodsUnlabelled(f, snap.Name)
			load.verify(f, "writes while a snapshot streamed to a PVC")
		})
	}
}

// registerManagedAccess registers, for the test's clients, a certificate of the cluster's
// managed client CA once the operator issued it.
func registerManagedAccess(f *framework.Test, name string) {
	f.T.Helper()
	waitSecret(f, name+"-ca")
	app := issueFrom(f, readCA(f, name+"-ca"), testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
	access, err := testpki.ClientConfig(secretData(f, name+"-ca")["tls.crt"], app, desired.MemberHost(name+"-e2e", name, f.Namespace))
	if err != nil {
		f.T.Fatal(err)
	}
	clusterAccess.Store(f.Namespace+"/"+name, access)
}

func createClaim(f *framework.Test, name string) {
	f.T.Helper()
	createClaimOfSize(f, name, "1Gi")
}

func createClaimOfSize(f *framework.Test, name, size string) {
	f.T.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
	if err := kc(f).Create(f.Ctx, pvc); err != nil {
		f.T.Fatalf("creating PVC %s: %v", name, err)
	}
}

// waitSnapshotFinal waits until snapshot name is Complete or Failed.
func waitSnapshotFinal(f *framework.Test, name string) *etcdv1alpha2.EtcdSnapshot {
	f.T.Helper()
	return waitSnapshotFinalWithin(f, name, snapshotTimeout)
}

// waitSnapshotFinalWithin waits up to timeout until snapshot name is Complete or Failed.
func waitSnapshotFinalWithin(f *framework.Test, name string, timeout time.Duration) *etcdv1alpha2.EtcdSnapshot {
	f.T.Helper()
	snap := &etcdv1alpha2.EtcdSnapshot{}
	if err := f.Poll("EtcdSnapshot "+name+" final", timeout, func(ctx context.Context) (bool, string, error) {
		if err := kc(f).Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: name}, snap); err != nil {
			return false, err.Error(), nil
		}
		ready := meta.FindStatusCondition(snap.Status.Conditions, etcdv1alpha2.ConditionReady)
		return snap.Status.Phase == etcdv1alpha2.SnapshotPhaseComplete || snap.Status.Phase == etcdv1alpha2.SnapshotPhaseFailed,
			fmt.Sprintf("phase %q, Ready %+v", snap.Status.Phase, ready), nil
	}); err != nil {
		f.T.Fatal(err)
	}
	return snap
}

// requireArtifact checks the file in dir against the snapshot's status: size, SHA-256, and the
// .sha256 and .uid siblings; it returns the file's size.
func requireArtifact(f *framework.Test, dir string, snap *etcdv1alpha2.EtcdSnapshot) int64 {
	f.T.Helper()
	a := snap.Status.Artifact
	path := filepath.Join(dir, snap.Name+".db")
	file, err := os.Open(path)
	if err != nil {
		f.T.Fatalf("the artifact on the claim: %v", err)
	}
	defer func() { _ = file.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, file)
	if err != nil {
		f.T.Fatal(err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if a == nil || n != a.SizeBytes || a.Checksum != "sha256:"+sum || a.Revision <= 0 || !strings.HasSuffix(a.URI, "/e2e/"+snap.Name+".db") {
		f.T.Errorf("file %s: %d bytes, sha256 %s; status.artifact %+v", path, n, sum, a)
	}
	sidecar, err := os.ReadFile(path + ".sha256")
	if err != nil || !strings.HasPrefix(string(sidecar), sum+"  "+snap.Name+".db") {
		f.T.Errorf("sidecar %s.sha256 = %q (%v), want the file's sum", path, sidecar, err)
	}
	if uid, err := os.ReadFile(path + ".uid"); err != nil || strings.TrimSpace(string(uid)) != string(snap.UID) {
		f.T.Errorf("sibling .uid = %q (%v), want %s", uid, err, snap.UID)
	}
	return n
}

// requireLastSnapshot checks that the cluster's status names snap as its last snapshot.
func requireLastSnapshot(f *framework.Test, name string, snap *etcdv1alpha2.EtcdSnapshot) {
	f.T.Helper()
	if err := f.Poll("status.lastSnapshot of "+name, time.Minute, func(ctx context.Context) (bool, string, error) {
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		last := ec.Status.LastSnapshot
		return last != nil && last.Name == snap.Name && last.URI == snap.Status.Artifact.URI, fmt.Sprintf("%+v", last), nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// requireSnapshotPodsUnlabelled checks the snapshot's Pods never carried the labels the cluster's
// Services, PDB and status.selector select on.
func requireSnapshotPodsUnlabelled(f *framework.Test, snapshot string) {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: etcdv1alpha2.LabelSnapshot + "=" + snapshot})
	if err != nil || len(pods.Items) == 0 {
		f.T.Fatalf("the snapshot's Pods: %d, %v", len(pods.Items), err)
	}
	for _, p := range pods.Items {
		for _, k := range []string{etcdv1alpha2.LabelCluster, etcdv1alpha2.LabelComponent, etcdv1alpha2.LabelRole} {
			if _, ok := p.Labels[k]; ok {
				f.T.Errorf("snapshot Pod %s carries %s", p.Name, k)
			}
		}
	}
}

// TestScheduleKeepsLastThree runs an EtcdSnapshotSchedule every minute with keepLast 3 to a PVC
// (docs/backup-restore.md, "Retention"): after five snapshots completed, the claim holds exactly
// the three newest files of the schedule, each with its siblings, and a file of the user's in
// the same folder, named like one of the schedule's, is untouched.
func TestScheduleKeepsLastThree(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	volumes := f.RequireVolumes()
	const name = "sched"
	createCluster(f, newCluster(f, name, 1))
	waitConverged(f, name, 1, bootstrapTimeout)
	createClaim(f, "backups")
	s := &etcdv1alpha2.EtcdSnapshotSchedule{ObjectMeta: metav1.ObjectMeta{Name: "minutely", Namespace: f.Namespace},
		Spec: etcdv1alpha2.EtcdSnapshotScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: name}, Schedule: "* * * * *",
			Destination: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "sched"}},
			Retention:   &etcdv1alpha2.SnapshotRetention{KeepLast: ptr.To[int32](3)}}}
	if err := kc(f).Create(f.Ctx, s); err != nil {
		t.Fatal(err)
	}
	// The claim binds when the first snapshot's Pod uses it; the user's file goes in before the
	// fourth snapshot, the first that prunes.
	dir, err := claimDir(f, volumes, "backups")
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "sched")
	foreign := filepath.Join(folder, "minutely-1.db")
	if err := os.MkdirAll(folder, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(foreign, []byte("the user's own file"), 0o644); err != nil {
		t.Fatal(err)
	}
	var done []string
	if err := f.Poll("five Complete snapshots of the schedule", 8*time.Minute, func(ctx context.Context) (bool, string, error) {
		var list etcdv1alpha2.EtcdSnapshotList
		if err := kc(f).List(ctx, &list, client.InNamespace(f.Namespace), client.MatchingLabels{etcdv1alpha2.LabelSchedule: "minutely"}); err != nil {
			return false, err.Error(), nil
		}
		done = done[:0]
		for _, snap := range list.Items {
			switch snap.Status.Phase {
			case etcdv1alpha2.SnapshotPhaseComplete:
				done = append(done, snap.Name)
			case etcdv1alpha2.SnapshotPhaseFailed:
				return false, "", fmt.Errorf("snapshot %s failed: %+v", snap.Name, meta.FindStatusCondition(snap.Status.Conditions, etcdv1alpha2.ConditionReady))
			}
		}
		return len(done) >= 5, fmt.Sprintf("%d complete: %v", len(done), done), nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(done) // names end in the slot's Unix minute: lexical order is slot order here
	entries, err := filepath.Glob(filepath.Join(folder, "minutely-*.db"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range entries {
		if e != foreign {
			kept = append(kept, strings.TrimSuffix(filepath.Base(e), ".db"))
		}
	}
	slices.Sort(kept)
	if want := done[len(done)-3:]; !slices.Equal(kept, want) {
		t.Errorf("the claim holds %v of the schedule's files, want the newest three %v", kept, want)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("the user's own file in the folder: %v", err)
	}
	for _, k := range kept {
		for _, sib := range []string{".sha256", ".uid", ".schedule"} {
			if _, err := os.Stat(filepath.Join(folder, k+".db"+sib)); err != nil {
				t.Errorf("sibling %s of %s: %v", sib, k, err)
			}
		}
	}
}

// claimDir waits until the claim is bound and returns its host folder.
func claimDir(f *framework.Test, volumes framework.Volumes, claim string) (string, error) {
	var dir string
	err := f.Poll("PVC "+claim+" bound", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		d, err := volumes.PVCHostPath(ctx, f.Namespace, claim)
		if err != nil {
			return false, err.Error(), nil
		}
		dir = d
		return true, "", nil
	})
	return dir, err
}

// TestRestoreFromPVCSnapshot writes 100 keys and takes a snapshot to a PVC under write traffic,
// then creates a new 3-member cluster restored from it (docs/backup-restore.md, "Restore"): the new cluster forms
// under a new cluster ID and holds exactly the keys, values and modification revisions the
// source held at the snapshot's revision.
func TestRestoreFromPVCSnapshot(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	const src, dst = "rsrc", "rdst"
	createCluster(f, newCluster(f, src, 3))
	source := waitConverged(f, src, 3, bootstrapTimeout)
	load := startLoad(f, src)
	srcCli, _ := dialVoters(f, src)
	putKeys(f, srcCli, "restore/", 100)
	waitAcked(f, load.gen, 200)
	createClaim(f, "backups")
	snap := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "before-restore", Namespace: f.Namespace},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: src},
			Destination: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "r"}}}}
	if err := kc(f).Create(f.Ctx, snap); err != nil {
		t.Fatal(err)
	}
	if snap = waitSnapshotFinal(f, snap.Name); snap.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete {
		t.Fatalf("snapshot ended %s", snap.Status.Phase)
	}
	load.verify(f, "writes while the snapshot to restore from was taken")

	start := time.Now()
	ec := newCluster(f, dst, 3)
	ec.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{
		Source:   etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "r/before-restore.db"}},
		Checksum: snap.Status.Artifact.Checksum}}
	createCluster(f, ec)
	restored := waitConverged(f, dst, 3, bootstrapTimeout)
	f.Record("restore-3-from-pvc", since(start), "EtcdCluster with bootstrap.restore created → 3 members converged")
	requireRestoredFrom(f, srcCli, source, restored, snap)
}

// putKeys writes n keys under prefix, each acknowledged.
func putKeys(f *framework.Test, cli *clientv3.Client, prefix string, n int) {
	f.T.Helper()
	for i := range n {
		if _, err := cli.Put(f.Ctx, fmt.Sprintf("%s%03d", prefix, i), fmt.Sprintf("value-%03d", i)); err != nil {
			f.T.Fatal(err)
		}
	}
}

// requireRestoredFrom checks that restored, bootstrapped from snap of source, has a new cluster
// ID and holds exactly the keys, values and modification revisions that source (read through
// srcCli) held at the snapshot's revision.
func requireRestoredFrom(f *framework.Test, srcCli *clientv3.Client, source, restored *etcdv1alpha2.EtcdCluster, snap *etcdv1alpha2.EtcdSnapshot) {
	f.T.Helper()
	t := f.T
	dst := restored.Name
	if restored.Status.ClusterID == "" || restored.Status.ClusterID == source.Status.ClusterID {
		t.Errorf("restored cluster ID %q, source %q: want a new one", restored.Status.ClusterID, source.Status.ClusterID)
	}
	dstCli, _ := dialVoters(f, dst)
	want, err := srcCli.Get(f.Ctx, "", clientv3.WithPrefix(), clientv3.WithRev(snap.Status.Artifact.Revision))
	if err != nil {
		t.Fatal(err)
	}
	got, err := dstCli.Get(f.Ctx, "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Kvs) < 100 || len(got.Kvs) != len(want.Kvs) {
		t.Fatalf("restored %d keys, the source held %d at revision %d", len(got.Kvs), len(want.Kvs), snap.Status.Artifact.Revision)
	}
	for i := range want.Kvs {
		w, g := want.Kvs[i], got.Kvs[i]
		if string(w.Key) != string(g.Key) || string(w.Value) != string(g.Value) || w.ModRevision != g.ModRevision {
			t.Fatalf("key %d: restored %q=%q@%d, source %q=%q@%d", i, g.Key, g.Value, g.ModRevision, w.Key, w.Value, w.ModRevision)
		}
	}
	if got.Header.Revision < snap.Status.Artifact.Revision {
		t.Errorf("restored revision %d, below the snapshot's %d", got.Header.Revision, snap.Status.Artifact.Revision)
	}
	f.RecordCount("restore-keys-compared-"+dst, int64(len(got.Kvs)), "keys, values and mod revisions equal to the source at the snapshot's revision")
}
