package etcdcluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// restoreClaim is the claim the snapshots of these tests are on.
const restoreClaim = "backups"

// etcdutlOf is the etcdutl of minor from ETCD_BIN_DIRS; the test is skipped without it.
func etcdutlOf(t *testing.T, minor string) string {
	t.Helper()
	dir, _, ok := etcdproc.FindRelease(minor)
	if !ok {
		t.Skipf("no etcd %s in %s (set it to the output of `go run ./hack/binaries etcd`)", minor, etcdproc.EnvBinDirs)
	}
	return filepath.Join(dir, "etcdutl")
}

// snapshotSource is an etcd holding keys, with a snapshot of it taken by the snapshot agent onto
// claim dir etcd/nightly.db (and its .sha256 and .version), and keys written after it.
type snapshotSource struct {
	cli *clientv3.Client
	res snapshot.Result
}

func newSnapshotSource(ctx context.Context, t *testing.T, dir string) *snapshotSource {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{})
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	for i := range 100 {
		if _, err := cli.Put(ctx, fmt.Sprintf("restore/%03d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{
		snapshot.EnvEndpoints: strings.Join(c.Endpoints(), ","), snapshot.EnvSnapshotName: "nightly", snapshot.EnvSnapshotUID: "uid-nightly",
		snapshot.EnvDestination: snapshot.DestinationPVC, snapshot.EnvPVCDir: dir, snapshot.EnvPVCClaim: restoreClaim, snapshot.EnvPVCSubPath: "etcd",
	}
	code, res := agentrun.Snapshot(ctx, t, env)
	if code != 0 {
		t.Fatalf("snapshot agent: exit %d: %s", code, res.Message)
	}
	for i := range 5 {
		if _, err := cli.Put(ctx, fmt.Sprintf("after/%d", i), "not in the snapshot"); err != nil {
			t.Fatal(err)
		}
	}
	return &snapshotSource{cli: cli, res: res}
}

// restoreCluster is an EtcdCluster restored from etcd/nightly.db on restoreClaim.
func restoreCluster(ns, name string, replicas int32) *etcdv1alpha2.EtcdCluster {
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
			Bootstrap: &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.SnapshotLocation{
				PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: restoreClaim, SubPath: "etcd/nightly.db"}}}}},
	}
}

// TestRestoreSeedFromSnapshot runs both controllers over real etcd processes, the fake kubelet
// running the seed's restore init container with the real restore agent and etcdutl. The
// artifact is first tampered with: the seed's restore fails with ChecksumMismatch, the cluster
// is Available=False/RestoreFailed quoting it (one Warning), nothing is written under member/
// and no cluster ID is latched. Once the artifact is whole again, the kubelet's next attempt
// restores it: the cluster forms under a new cluster ID, grows to three members, and serves
// exactly the source's keyspace at the snapshot's revision. Only the seed restored; a Pod the
// seed gets after the cluster formed restores nothing.
func TestRestoreSeedFromSnapshot(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	w.real.etcdutl = etcdutlOf(t, "3.6")
	w.guardImage = testGuardImage
	w.memberOpts = append(w.memberOpts, etcdmember.WithGuardImage(testGuardImage))
	w.startController()
	ctx, cancel := context.WithTimeout(t.Context(), 3*realConvergeTimeout)
	defer cancel()
	src := newSnapshotSource(ctx, t, w.real.claimDir(restoreClaim))
	artifact := filepath.Join(w.real.claimDir(restoreClaim), "etcd", "nightly.db")
	flipByte(t, artifact, 8192+5)

	if err := w.createCluster(restoreCluster(w.ns, "restored", 1)); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, realConvergeTimeout, "Available=False/RestoreFailed",
		w.condition("restored", etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse, membership.ReasonRestoreFailed, "ChecksumMismatch", "sidecar"))
	seed := onlyMember(t, w, "restored")
	if entries, _ := os.ReadDir(filepath.Join(w.real.dir, seedVolume(t, w, seed))); len(entries) != 0 {
		t.Errorf("the seed's volume holds %d entries after a refused restore", len(entries))
	}
	if id := w.cluster("restored").Status.ClusterID; id != "" {
		t.Errorf("cluster ID %s latched although the restore failed", id)
	}

	flipByte(t, artifact, 8192+5)
	wait.Eventually(t, realConvergeTimeout, "restored and formed", w.converged("restored", 1))
	cli := w.real.client(t)
	checkRestoredKeyspace(ctx, t, src, cli)
	restoredID := etcdclient.FormatID(clusterID(ctx, t, cli))
	if got := w.cluster("restored").Status.ClusterID; got != restoredID || restoredID == etcdclient.FormatID(clusterID(ctx, t, src.cli)) {
		t.Errorf("status.clusterID %s, etcd's %s: want etcd's, and not the source's", got, restoredID)
	}
	if n := w.eventCount("restored", membership.ReasonRestoreFailed); n != 1 {
		t.Errorf("%d RestoreFailed Events, want 1", n)
	}

	w.setReplicas("restored", 3)
	wait.Eventually(t, realConvergeTimeout, "grown to 3", w.converged("restored", 3))
	checkRestoredKeyspace(ctx, t, src, cli)
	checkOnlySeedRestored(ctx, t, w, seed)
}

// checkRestoredKeyspace compares every key of the restored cluster with the source's at the
// snapshot's revision; the keys written since start the restored cluster's own history.
func checkRestoredKeyspace(ctx context.Context, t *testing.T, src *snapshotSource, cli *clientv3.Client) {
	t.Helper()
	want, err := src.cli.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithRev(src.res.Revision))
	if err != nil {
		t.Fatal(err)
	}
	got, err := cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != len(want.Kvs) || got.Header.Revision < src.res.Revision {
		t.Fatalf("restored %d keys at revision %d; the source had %d at the snapshot's revision %d",
			len(got.Kvs), got.Header.Revision, len(want.Kvs), src.res.Revision)
	}
	for i := range want.Kvs {
		if string(got.Kvs[i].Key) != string(want.Kvs[i].Key) || string(got.Kvs[i].Value) != string(want.Kvs[i].Value) ||
			got.Kvs[i].ModRevision != want.Kvs[i].ModRevision {
			t.Errorf("key %d: restored %s=%s@%d, source %s=%s@%d", i, got.Kvs[i].Key, got.Kvs[i].Value, got.Kvs[i].ModRevision,
				want.Kvs[i].Key, want.Kvs[i].Value, want.Kvs[i].ModRevision)
		}
	}
}

// checkOnlySeedRestored: the seed carries spec.restore and no other member does; after the
// cluster formed, neither the seed's next Pod nor any other Pod has a restore init container.
func checkOnlySeedRestored(ctx context.Context, t *testing.T, w *world, seed string) {
	t.Helper()
	ms, err := w.members(ctx, "restored")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if (m.Spec.Restore != nil) != (m.Name == seed) {
			t.Errorf("member %s (seed %s) carries restore %+v", m.Name, seed, m.Spec.Restore)
		}
	}
	old := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: seed}, old); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, realConvergeTimeout, "the seed's Pod recreated and the cluster converged", func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: seed}, p); err != nil || p.UID == old.UID {
			return errors.Join(err, errNotYet)
		}
		return w.converged("restored", 3)()
	})
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.InitContainers {
			if c.Name == desired.RestoreContainerName || c.Name == desired.RestoreToolsContainerName {
				t.Errorf("Pod %s restores after the cluster formed", p.Name)
			}
		}
	}
}

func onlyMember(t *testing.T, w *world, cluster string) string {
	t.Helper()
	ms, err := w.members(t.Context(), cluster)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%d members: %v", len(ms), err)
	}
	return ms[0].Name
}

// seedVolume is the folder of the seed's data volume in the fake kubelet.
func seedVolume(t *testing.T, w *world, seed string) string {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: desired.PVCName(seed)}, pvc); err != nil {
		t.Fatal(err)
	}
	return "pvc-" + string(pvc.UID)
}

func flipByte(t *testing.T, file string, at int64) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreNeedsTheOperatorImage: without the operator's image (an operator run outside a
// Pod without --data-guard-image) the seed's Pod is not built at all, rather than started
// without its restore: the seed's Ready condition says why, and the cluster quotes it.
func TestRestoreNeedsTheOperatorImage(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.kubeletOnly = true
	w.startController()
	if err := w.createCluster(restoreCluster(w.ns, "no-image", 3)); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "WaitingForSeed quoting the missing image",
		w.condition("no-image", etcdv1alpha2.ConditionProgressing, metav1.ConditionTrue, membership.ReasonWaitingForSeed, "needs the operator's own image"))
	var pods corev1.PodList
	if err := k8s.List(t.Context(), &pods, client.InNamespace(w.ns)); err != nil || len(pods.Items) != 0 {
		t.Errorf("%d Pods (%v), want none", len(pods.Items), err)
	}
}
