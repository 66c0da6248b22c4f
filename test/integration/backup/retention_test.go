package backup_test

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// createScheduled creates snapshot name as schedule creates its snapshots: controlled by it and
// labelled with its name.
func (w *snapshotWorld) createScheduled(schedule *etcdv1alpha2.EtcdSnapshotSchedule, name string) {
	w.t.Helper()
	s := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name,
		Labels: map[string]string{etcdv1alpha2.LabelSchedule: schedule.Name, etcdv1alpha2.LabelCluster: "etcd"}},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Destination: schedule.Spec.Destination}}
	if err := controllerutil.SetControllerReference(schedule, s, k8sClient.Scheme()); err != nil {
		w.t.Fatal(err)
	}
	if err := k8sClient.Create(w.t.Context(), s); err != nil {
		w.t.Fatal(err)
	}
}

// newRetainingSchedule creates the schedule nightly with keepLast 3 and keepDaily 7 in Berlin.
func (w *snapshotWorld) newRetainingSchedule() *etcdv1alpha2.EtcdSnapshotSchedule {
	w.t.Helper()
	schedule := &etcdv1alpha2.EtcdSnapshotSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "nightly"},
		Spec: etcdv1alpha2.EtcdSnapshotScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: "0 2 * * *",
			TimeZone: ptr.To("Europe/Berlin"), Destination: toClaim,
			Retention: &etcdv1alpha2.SnapshotRetention{KeepLast: ptr.To[int32](3), KeepDaily: ptr.To[int32](7)}}}
	if err := k8sClient.Create(w.t.Context(), schedule); err != nil {
		w.t.Fatal(err)
	}
	return schedule
}

func (w *snapshotWorld) jobEnv(snapshotName string) map[string]string {
	w.t.Helper()
	job := &batchv1.Job{}
	if err := k8sClient.Get(w.t.Context(), client.ObjectKey{Namespace: w.ns, Name: desired.SnapshotJobName(snapshotName)}, job); err != nil {
		w.t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env
}

// TestScheduledSnapshotJobCarriesTheSchedule: the Job of a schedule's snapshot gives the agent
// the schedule's name, UID and retention (read from the schedule); a one-off snapshot's Job,
// and that of a snapshot labelled like a schedule's but not controlled by it, give none.
func TestScheduledSnapshotJobCarriesTheSchedule(t *testing.T) {
	t.Parallel()
	w := newSnapshotWorld(t, 3)
	schedule := w.newRetainingSchedule()
	w.createScheduled(schedule, "nightly-29000000")
	requirePhase(t, w.pass("nightly-29000000"), etcdv1alpha2.SnapshotPhaseStarted, backup.ReasonJobCreated)
	env := w.jobEnv("nightly-29000000")
	want := map[string]string{snapshot.EnvScheduleName: "nightly", snapshot.EnvScheduleUID: string(schedule.UID),
		snapshot.EnvRetentionKeepLast: "3", snapshot.EnvRetentionKeepDaily: "7", snapshot.EnvRetentionTimeZone: "Europe/Berlin"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if _, set := env[snapshot.EnvRetentionKeepWeekly]; set {
		t.Errorf("%s set without keepWeekly", snapshot.EnvRetentionKeepWeekly)
	}

	w.create("before-upgrade", toClaim)
	labelled := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "nightly-29000060",
		Labels: map[string]string{etcdv1alpha2.LabelSchedule: "nightly"}},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Destination: toClaim}}
	if err := k8sClient.Create(t.Context(), labelled); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"before-upgrade", "nightly-29000060"} {
		requirePhase(t, w.pass(name), etcdv1alpha2.SnapshotPhaseStarted, backup.ReasonJobCreated)
		for k := range w.jobEnv(name) {
			if strings.HasPrefix(k, "SNAPSHOT_SCHEDULE_") || strings.HasPrefix(k, "SNAPSHOT_RETENTION_") {
				t.Errorf("%s: the Job of a snapshot no schedule controls sets %s", name, k)
			}
		}
	}
}

// TestSnapshotReportsThePruning: the agent's prune report reaches the snapshot's Ready message
// (Ready stays True: the snapshot is stored) and the Events SnapshotsPruned and RetentionFailed.
func TestSnapshotReportsThePruning(t *testing.T) {
	t.Parallel()
	w := newSnapshotWorld(t, 3)
	schedule := w.newRetainingSchedule()
	w.createScheduled(schedule, "nightly-29000000")
	w.pass("nightly-29000000")
	res := snapshot.Result{URI: "pvc://backups/etcd/nightly-29000000.db", SizeBytes: 4096, Checksum: "sha256:" + zeros64, Revision: 42, EtcdVersion: "3.6.16",
		Pruned: []string{"nightly-28990000.db", "nightly-28995000.db"}, PrunedCount: 3, PruneError: "pruning nightly-28999000.db: deleting nightly-28999000.db: permission denied"}
	w.finishJob("nightly-29000000", res)
	s := w.pass("nightly-29000000")
	requirePhase(t, s, etcdv1alpha2.SnapshotPhaseComplete, backup.ReasonSnapshotStored)
	ready := meta.FindStatusCondition(s.Status.Conditions, etcdv1alpha2.ConditionReady)
	for _, part := range []string{"stored pvc://backups/etcd/nightly-29000000.db", "pruned 3 older artifacts of the schedule: nightly-28990000.db, nightly-28995000.db, and 1 more",
		"retention failed, the snapshot is stored: pruning nightly-28999000.db"} {
		if !strings.Contains(ready.Message, part) {
			t.Errorf("Ready message %q lacks %q", ready.Message, part)
		}
	}
	var events []string
	for len(w.events.Events) > 0 {
		events = append(events, <-w.events.Events)
	}
	for _, prefix := range []string{"Normal SnapshotStored stored pvc://", "Normal SnapshotsPruned pruned 3 older artifacts", "Warning RetentionFailed the schedule's retention failed"} {
		if !containsPrefix(events, prefix) {
			t.Errorf("events %q: none starts %q", events, prefix)
		}
	}
}

// TestRetentionFailedEventFitsTheAPI: an agent's prune error may be 4 KiB; the Warning keeps
// within the 1 KiB note an Event may carry, so the API server does not refuse it.
func TestRetentionFailedEventFitsTheAPI(t *testing.T) {
	t.Parallel()
	w := newSnapshotWorld(t, 3)
	schedule := w.newRetainingSchedule()
	w.createScheduled(schedule, "nightly-29000000")
	w.pass("nightly-29000000")
	w.finishJob("nightly-29000000", snapshot.Result{URI: "pvc://backups/etcd/nightly-29000000.db", SizeBytes: 1, Checksum: "sha256:" + zeros64,
		PruneError: "listing the schedule's artifacts: " + strings.Repeat("é", 1800)})
	requirePhase(t, w.pass("nightly-29000000"), etcdv1alpha2.SnapshotPhaseComplete, backup.ReasonSnapshotStored)
	seen := false
	for len(w.events.Events) > 0 {
		note, ok := strings.CutPrefix(<-w.events.Events, "Warning RetentionFailed ")
		if !ok {
			continue
		}
		seen = true
		if len(note) > 1024 || !strings.HasSuffix(note, "…") {
			t.Errorf("RetentionFailed note of %d bytes, ends %q", len(note), note[len(note)-8:])
		}
	}
	if !seen {
		t.Error("no RetentionFailed Event")
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
