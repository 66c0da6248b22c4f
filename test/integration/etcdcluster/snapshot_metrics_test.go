package etcdcluster_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/utils/series"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestLastSnapshotMetrics: the cluster controller sets the last-snapshot gauges from
// status.lastSnapshot (docs/backup-restore.md, "Metrics"); the size goes when the EtcdSnapshot
// does, the time stays with the record; deleting the cluster drops both.
func TestLastSnapshotMetrics(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	c := w.newCluster("bk", 1)
	wait.Eventually(t, convergeTimeout, "1 member", w.converged("bk", 1))

	completed := time.Unix(1_800_000_000, 0)
	s := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "s1"},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "bk"},
			Destination: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups"}}}}
	if err := k8s.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	// The test plays the EtcdSnapshot controller, which does not run here.
	s.Status = etcdv1alpha2.EtcdSnapshotStatus{Phase: etcdv1alpha2.SnapshotPhaseComplete, CompletedAt: &metav1.Time{Time: completed},
		Artifact: &etcdv1alpha2.SnapshotArtifact{URI: "pvc://backups/s1.db", SizeBytes: 4096, Revision: 7}}
	if err := k8s.Status().Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"namespace": w.ns, "cluster": "bk"}
	gauges := func(wantTime float64, wantSize *float64) func() error {
		return func() error {
			at, ok := series.Get(t, "etcd_operator_snapshot_last_success_timestamp_seconds", labels)
			if !ok || at.Value != wantTime {
				return fmt.Errorf("last success %v (present %t), want %v", at.Value, ok, wantTime)
			}
			size, ok := series.Get(t, "etcd_operator_snapshot_last_size_bytes", labels)
			if wantSize == nil && ok {
				return fmt.Errorf("last size %v, want no series", size.Value)
			}
			if wantSize != nil && (!ok || size.Value != *wantSize) {
				return fmt.Errorf("last size %v (present %t), want %v", size.Value, ok, *wantSize)
			}
			return nil
		}
	}
	size := 4096.0
	wait.Eventually(t, convergeTimeout, "the last-snapshot gauges", gauges(1_800_000_000, &size))

	// A history limit deletes the object: status.lastSnapshot keeps the time, the size is unknown.
	if err := k8s.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "the time without the size", gauges(1_800_000_000, nil))
	if last := w.cluster("bk").Status.LastSnapshot; last == nil || last.Name != "s1" {
		t.Errorf("status.lastSnapshot %+v, want s1 kept", last)
	}

	if err := k8s.Delete(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "no series of the deleted cluster", func() error {
		if at, ok := series.Get(t, "etcd_operator_snapshot_last_success_timestamp_seconds", labels); ok {
			return fmt.Errorf("last success still %v", at.Value)
		}
		return nil
	})
}
