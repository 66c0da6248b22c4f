package backup_test

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdsnapshot"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

// snapshotWorld is one namespace with a cluster, a claim and a snapshot reconciler on a fake
// clock; the test plays the Job controller and the kubelet, writing Job conditions and the
// agent's termination message.
type snapshotWorld struct {
	t      *testing.T
	ns     string
	clock  *clocktesting.FakeClock
	r      *etcdsnapshot.SnapshotReconciler
	events *events.FakeRecorder
}

func newSnapshotWorld(t *testing.T, replicas int32) *snapshotWorld {
	t.Helper()
	w := &snapshotWorld{t: t, ns: apiserver.NewNamespace(t, k8sClient, "snap-"), clock: clocktesting.NewFakeClock(time.Now()), events: events.NewFakeRecorder(100)}
	w.r = etcdsnapshot.NewSnapshot(k8sClient, k8sClient, w.events, w.clock, "etcd-operator:test")
	ec := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "etcd"}, Spec: etcdv1alpha2.EtcdClusterSpec{Version: "3.6.16", Replicas: ptr.To(replicas)}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "backups"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	for _, o := range []client.Object{ec, pvc} {
		if err := k8sClient.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w *snapshotWorld) create(name string, dest etcdv1alpha2.SnapshotLocation) {
	w.t.Helper()
	s := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Destination: dest}}
	if err := k8sClient.Create(w.t.Context(), s); err != nil {
		w.t.Fatal(err)
	}
}

var toClaim = etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "etcd"}}

// pass runs one pass over snapshot name and returns it as stored after.
func (w *snapshotWorld) pass(name string) *etcdv1alpha2.EtcdSnapshot {
	w.t.Helper()
	key := client.ObjectKey{Namespace: w.ns, Name: name}
	if _, err := w.r.Reconcile(w.t.Context(), ctrl.Request{NamespacedName: key}); err != nil {
		w.t.Fatalf("pass: %v", err)
	}
	s := &etcdv1alpha2.EtcdSnapshot{}
	if err := k8sClient.Get(w.t.Context(), key, s); err != nil {
		w.t.Fatal(err)
	}
	return s
}

func requirePhase(t *testing.T, s *etcdv1alpha2.EtcdSnapshot, phase etcdv1alpha2.SnapshotPhase, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(s.Status.Conditions, etcdv1alpha2.ConditionReady)
	if s.Status.Phase != phase || c == nil || c.Reason != reason || c.Message == "" {
		t.Fatalf("phase %s, Ready %+v; want %s/%s with a message", s.Status.Phase, c, phase, reason)
	}
	if (c.Status == metav1.ConditionTrue) != (phase == etcdv1alpha2.SnapshotPhaseComplete) {
		t.Errorf("Ready %s in phase %s", c.Status, phase)
	}
}

// finishJob ends snapshot name's Job as the Job controller would, with one Pod whose agent
// reported res.
func (w *snapshotWorld) finishJob(name string, res snapshot.Result) {
	w.t.Helper()
	job := &batchv1.Job{}
	if err := k8sClient.Get(w.t.Context(), client.ObjectKey{Namespace: w.ns, Name: desired.SnapshotJobName(name)}, job); err != nil {
		w.t.Fatal(err)
	}
	if err := agentrun.FinishSnapshotJob(w.t.Context(), k8sClient, job, res); err != nil {
		w.t.Fatal(err)
	}
}

// TestSnapshotStoredThroughItsJob: a new snapshot gets its Job (owned, the Job name, labels that
// select nothing of the cluster's), is Started, stays so while the Job runs, and completes with
// the artifact its agent reported; its duration is recorded once; Complete is final.
func TestSnapshotStoredThroughItsJob(t *testing.T) {
	t.Parallel()
	w := newSnapshotWorld(t, 3)
	w.create("s1", toClaim)
	s := w.pass("s1")
	requirePhase(t, s, etcdv1alpha2.SnapshotPhaseStarted, backup.ReasonJobCreated)
	if s.Status.StartedAt == nil {
		t.Error("no startedAt")
	}
	job := &batchv1.Job{}
	if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: "s1-snapshot"}, job); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != s.UID {
		t.Errorf("Job owner %v, want the snapshot", ref)
	}
	requirePhase(t, w.pass("s1"), etcdv1alpha2.SnapshotPhaseStarted, backup.ReasonJobRunning)
	res := snapshot.Result{URI: "pvc://backups/etcd/s1.db", SizeBytes: 4096, Checksum: "sha256:" + zeros64, Revision: 42, EtcdVersion: "3.6.16"}
	w.finishJob("s1", res)
	w.clock.Step(7 * time.Second)
	s = w.pass("s1")
	requirePhase(t, s, etcdv1alpha2.SnapshotPhaseComplete, backup.ReasonSnapshotStored)
	if a := s.Status.Artifact; a == nil || a.URI != res.URI || a.SizeBytes != res.SizeBytes || a.Checksum != res.Checksum || a.Revision != 42 || a.EtcdVersion != "3.6.16" || s.Status.CompletedAt == nil {
		t.Errorf("artifact %+v, completedAt %v", a, s.Status.CompletedAt)
	}
	w.requireDurations(1, 7)
	if err := k8sClient.Delete(t.Context(), job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	requirePhase(t, w.pass("s1"), etcdv1alpha2.SnapshotPhaseComplete, backup.ReasonSnapshotStored)
	// Passes over the final snapshot, of this controller or of a restarted one, record nothing.
	w.r = etcdsnapshot.NewSnapshot(k8sClient, k8sClient, w.events, w.clock, "etcd-operator:test")
	w.pass("s1")
	w.requireDurations(1, 7)
	for _, r := range []string{string(snapshot.ReasonFailed), backup.ReasonJobFailed} {
		w.requireFailures(r, 0)
	}
}

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"

// TestSnapshotFailures: each way a snapshot fails ends Failed with its own reason, counted once
// under that reason (or Failed, for a reason outside the closed set), and the Job is never
// re-run.
func TestSnapshotFailures(t *testing.T) {
	t.Parallel()
	t.Run("the agent refused to overwrite", func(t *testing.T) {
		t.Parallel()
		w := newSnapshotWorld(t, 3)
		w.create("s2", toClaim)
		w.pass("s2")
		w.finishJob("s2", snapshot.Result{Reason: snapshot.ReasonArtifactExists, Message: "pvc://backups/etcd/s2.db belongs to snapshot uid-x"})
		requirePhase(t, w.pass("s2"), etcdv1alpha2.SnapshotPhaseFailed, string(snapshot.ReasonArtifactExists))
		w.requireFailures(string(snapshot.ReasonArtifactExists), 1)
		// Counted on the transition only: not again by a later pass, nor by a restarted operator.
		w.pass("s2")
		w.r = etcdsnapshot.NewSnapshot(k8sClient, k8sClient, w.events, w.clock, "etcd-operator:test")
		w.pass("s2")
		w.requireFailures(string(snapshot.ReasonArtifactExists), 1)
		w.requireDurations(0, 0)
	})
	t.Run("the agent reported a reason of its own", func(t *testing.T) {
		t.Parallel()
		w := newSnapshotWorld(t, 3)
		w.create("s5", toClaim)
		w.pass("s5")
		w.finishJob("s5", snapshot.Result{Reason: "SomethingNew", Message: "a newer agent's reason"})
		requirePhase(t, w.pass("s5"), etcdv1alpha2.SnapshotPhaseFailed, "SomethingNew")
		w.requireFailures("SomethingNew", 0)
		w.requireFailures(string(snapshot.ReasonFailed), 1)
	})
	t.Run("the Job was deleted while it ran", func(t *testing.T) {
		t.Parallel()
		w := newSnapshotWorld(t, 3)
		w.create("s3", toClaim)
		w.pass("s3")
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "s3-snapshot"}}
		if err := k8sClient.Delete(t.Context(), job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		requirePhase(t, w.pass("s3"), etcdv1alpha2.SnapshotPhaseFailed, backup.ReasonSnapshotJobLost)
		var jobs batchv1.JobList
		if err := k8sClient.List(t.Context(), &jobs, client.InNamespace(w.ns)); err != nil || len(jobs.Items) != 0 {
			t.Errorf("%d Jobs after the loss (%v), want none: a lost snapshot is never re-run", len(jobs.Items), err)
		}
	})
	t.Run("the cluster is paused", func(t *testing.T) {
		t.Parallel()
		w := newSnapshotWorld(t, 0)
		w.create("s4", toClaim)
		requirePhase(t, w.pass("s4"), etcdv1alpha2.SnapshotPhaseFailed, backup.ReasonClusterPaused)
		w.requireFailures(backup.ReasonClusterPaused, 1)
	})
}

// TestSnapshotWaitsForItsSecrets: an S3 snapshot whose credentials Secret is missing stays
// Pending naming it, starts once it exists, and fails after 15 minutes without it.
func TestSnapshotWaitsForItsSecrets(t *testing.T) {
	t.Parallel()
	w := newSnapshotWorld(t, 3)
	s3 := etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{Endpoint: "http://s3:8333", Bucket: "b", CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}
	w.create("s5", s3)
	w.create("s6", s3)
	s := w.pass("s5")
	requirePhase(t, s, etcdv1alpha2.SnapshotPhasePending, backup.ReasonSecretMissing)
	if c := meta.FindStatusCondition(s.Status.Conditions, etcdv1alpha2.ConditionReady); c == nil || c.Message != "Secret creds does not exist in namespace "+w.ns+": create it; the snapshot waits for it" {
		t.Errorf("Ready message %v", c)
	}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "creds"}, Data: map[string][]byte{agentenv.EnvAWSAccessKeyID: []byte("k")}}
	if err := k8sClient.Create(t.Context(), creds); err != nil {
		t.Fatal(err)
	}
	requirePhase(t, w.pass("s5"), etcdv1alpha2.SnapshotPhasePending, backup.ReasonSecretMissing)
	creds.Data[agentenv.EnvAWSSecretAccessKey] = []byte("s")
	if err := k8sClient.Update(t.Context(), creds); err != nil {
		t.Fatal(err)
	}
	requirePhase(t, w.pass("s5"), etcdv1alpha2.SnapshotPhaseStarted, backup.ReasonJobCreated)
	if err := k8sClient.Delete(t.Context(), creds); err != nil {
		t.Fatal(err)
	}
	s6 := &etcdv1alpha2.EtcdSnapshot{}
	if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: "s6"}, s6); err != nil {
		t.Fatal(err)
	}
	w.clock.SetTime(s6.CreationTimestamp.Add(backup.AuthLatchTimeout))
	requirePhase(t, w.pass("s6"), etcdv1alpha2.SnapshotPhaseFailed, backup.ReasonSecretMissing)
}
