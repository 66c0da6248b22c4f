package backup_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdsnapshot"
	"github.com/etcd-operator/etcd-operator/internal/cronslot"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

// scheduleWorld is one namespace with a cluster object and a schedule reconciler on a fake clock
// that the test moves, from the schedule's creation; each pass is one Reconcile call.
type scheduleWorld struct {
	t     *testing.T
	ns    string
	clock *clocktesting.FakeClock
	r     *etcdsnapshot.ScheduleReconciler
}

func newScheduleWorld(t *testing.T, withCluster bool) *scheduleWorld {
	t.Helper()
	w := &scheduleWorld{t: t, ns: apiserver.NewNamespace(t, k8sClient, "backup-"), clock: clocktesting.NewFakeClock(time.Now())}
	w.r = etcdsnapshot.NewSchedule(k8sClient, events.NewFakeRecorder(100), w.clock)
	if withCluster {
		ec := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "etcd"}, Spec: etcdv1alpha2.EtcdClusterSpec{Version: "3.6.16"}}
		if err := k8sClient.Create(t.Context(), ec); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// schedule creates an every-minute schedule of cluster etcd, edited by edit.
func (w *scheduleWorld) schedule(edit func(*etcdv1alpha2.EtcdSnapshotScheduleSpec)) *etcdv1alpha2.EtcdSnapshotSchedule {
	w.t.Helper()
	s := &etcdv1alpha2.EtcdSnapshotSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "minutely"},
		Spec: etcdv1alpha2.EtcdSnapshotScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: "* * * * *",
			Destination: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups"}}}}
	if edit != nil {
		edit(&s.Spec)
	}
	if err := k8sClient.Create(w.t.Context(), s); err != nil {
		w.t.Fatal(err)
	}
	// Slots count from the creation, which the API server stamps in whole seconds: the test's
	// clock starts there, so that a step of a minute always crosses exactly one slot.
	w.clock.SetTime(s.CreationTimestamp.Time)
	return s
}

// atSecond moves the clock forward to second sec of its current minute, crossing no slot.
func (w *scheduleWorld) atSecond(sec int) {
	w.t.Helper()
	now := w.clock.Now()
	at := now.Truncate(time.Minute).Add(time.Duration(sec) * time.Second)
	if at.Before(now) {
		w.t.Fatalf("clock at %s is past second %d of its minute", now, sec)
	}
	w.clock.SetTime(at)
}

// pass moves the clock by d and runs one pass; it returns the schedule as stored after it.
func (w *scheduleWorld) pass(d time.Duration) *etcdv1alpha2.EtcdSnapshotSchedule {
	w.t.Helper()
	w.clock.Step(d)
	key := client.ObjectKey{Namespace: w.ns, Name: "minutely"}
	res, err := w.r.Reconcile(w.t.Context(), ctrl.Request{NamespacedName: key})
	if err != nil {
		w.t.Fatalf("pass: %v", err)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute+time.Second {
		w.t.Errorf("requeue after %s, want the next minute's slot", res.RequeueAfter)
	}
	s := &etcdv1alpha2.EtcdSnapshotSchedule{}
	if err := k8sClient.Get(w.t.Context(), key, s); err != nil {
		w.t.Fatal(err)
	}
	return s
}

func (w *scheduleWorld) snapshots() []etcdv1alpha2.EtcdSnapshot {
	w.t.Helper()
	var list etcdv1alpha2.EtcdSnapshotList
	if err := k8sClient.List(w.t.Context(), &list, client.InNamespace(w.ns)); err != nil {
		w.t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b etcdv1alpha2.EtcdSnapshot) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// finish gives snapshot name a final phase, as the snapshot controller would.
func (w *scheduleWorld) finish(name string, phase etcdv1alpha2.SnapshotPhase) {
	w.t.Helper()
	s := &etcdv1alpha2.EtcdSnapshot{}
	if err := k8sClient.Get(w.t.Context(), client.ObjectKey{Namespace: w.ns, Name: name}, s); err != nil {
		w.t.Fatal(err)
	}
	s.Status.Phase = phase
	s.Status.CompletedAt = &metav1.Time{Time: w.clock.Now().Truncate(time.Second)}
	reason := "SnapshotStored"
	if phase == etcdv1alpha2.SnapshotPhaseFailed {
		reason = "JobFailed"
	}
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: "set by the test"})
	if err := k8sClient.Status().Update(w.t.Context(), s); err != nil {
		w.t.Fatal(err)
	}
}

func requireReady(t *testing.T, s *etcdv1alpha2.EtcdSnapshotSchedule, status metav1.ConditionStatus, reason, contains string) {
	t.Helper()
	c := meta.FindStatusCondition(s.Status.Conditions, etcdv1alpha2.ConditionReady)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, contains) {
		t.Fatalf("Ready = %+v, want %s/%s containing %q", c, status, reason, contains)
	}
}

// TestScheduleCreatesOneSnapshotPerSlot: a due slot gets one EtcdSnapshot under its
// deterministic name, owned by and labelled with the schedule, carrying the destination; a
// second pass in the same minute creates nothing; with concurrencyPolicy Forbid the next slot is
// skipped while the first snapshot runs, and taken once it finished.
func TestScheduleCreatesOneSnapshotPerSlot(t *testing.T) {
	t.Parallel()
	w := newScheduleWorld(t, true)
	sched := w.schedule(nil)
	s := w.pass(61 * time.Second)
	requireReady(t, s, metav1.ConditionTrue, etcdsnapshot.ReasonScheduled, "next snapshot at")
	snaps := w.snapshots()
	if len(snaps) != 1 || s.Status.LastScheduleTime == nil || snaps[0].Name != cronslot.Name("minutely", s.Status.LastScheduleTime.Time) {
		t.Fatalf("snapshots %v, lastScheduleTime %v: want one named after the slot", snaps, s.Status.LastScheduleTime)
	}
	first := snaps[0]
	if ref := metav1.GetControllerOf(&first); ref == nil || ref.UID != sched.UID || first.Labels[etcdv1alpha2.LabelSchedule] != "minutely" ||
		first.Labels[etcdv1alpha2.LabelCluster] != "etcd" || first.Spec.Destination.PVC == nil || first.Spec.Destination.PVC.ClaimName != "backups" {
		t.Errorf("snapshot %s: owner %v, labels %v, destination %+v", first.Name, ref, first.Labels, first.Spec.Destination)
	}
	if s.Status.Active == nil || s.Status.Active[0].Name != first.Name {
		t.Errorf("active = %v, want %s", s.Status.Active, first.Name)
	}
	w.pass(time.Second)
	if n := len(w.snapshots()); n != 1 {
		t.Fatalf("%d snapshots after a second pass in the same minute, want 1", n)
	}
	s = w.pass(time.Minute)
	requireReady(t, s, metav1.ConditionTrue, etcdsnapshot.ReasonScheduled, "concurrencyPolicy Forbid")
	if n := len(w.snapshots()); n != 1 {
		t.Fatalf("%d snapshots while the first still runs, want 1 (Forbid)", n)
	}
	w.finish(first.Name, etcdv1alpha2.SnapshotPhaseComplete)
	s = w.pass(time.Minute)
	if n := len(w.snapshots()); n != 2 || s.Status.LastSuccessfulTime == nil {
		t.Fatalf("%d snapshots, lastSuccessfulTime %v after the first completed; want 2 and a time", n, s.Status.LastSuccessfulTime)
	}
}

// TestScheduleAfterAnOutage: an operator that was down for ten minutes and comes back 45 s after
// a slot takes one snapshot, of that latest missed slot; with startingDeadlineSeconds 30 it takes
// none and says why.
func TestScheduleAfterAnOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		deadline *int64
		want     int
	}{{"no deadline", nil, 1}, {"a deadline of 30 s", ptr.To[int64](30), 0}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newScheduleWorld(t, true)
			w.schedule(func(s *etcdv1alpha2.EtcdSnapshotScheduleSpec) { s.StartingDeadlineSeconds = tc.deadline })
			firstSlot := w.clock.Now().Truncate(time.Minute).Add(time.Minute)
			w.clock.SetTime(firstSlot.Add(9 * time.Minute))
			s := w.pass(45 * time.Second)
			if n := len(w.snapshots()); n != tc.want {
				t.Fatalf("%d snapshots after the outage, want %d", n, tc.want)
			}
			if tc.want == 0 {
				requireReady(t, s, metav1.ConditionTrue, etcdsnapshot.ReasonScheduled, "past startingDeadlineSeconds 30")
			}
		})
	}
}

// TestScheduleRefusesToRun: a missing cluster, a suspended schedule and a zone that does not
// exist each create nothing and say so in Ready, naming the fix.
func TestScheduleRefusesToRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		withCluster bool
		edit        func(*etcdv1alpha2.EtcdSnapshotScheduleSpec)
		reason      string
		contains    string
	}{
		{"cluster missing", false, nil, etcdsnapshot.ReasonClusterNotFound, "EtcdCluster etcd does not exist"},
		{"suspended", true, func(s *etcdv1alpha2.EtcdSnapshotScheduleSpec) { s.Suspend = true }, etcdsnapshot.ReasonSuspended, "set it to false"},
		{"unknown zone", true, func(s *etcdv1alpha2.EtcdSnapshotScheduleSpec) { s.TimeZone = ptr.To("Mars/Olympus_Mons") }, etcdsnapshot.ReasonInvalidSchedule, "fix spec.schedule or spec.timeZone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newScheduleWorld(t, tc.withCluster)
			w.schedule(tc.edit)
			key := client.ObjectKey{Namespace: w.ns, Name: "minutely"}
			w.clock.Step(2 * time.Minute)
			if _, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			s := &etcdv1alpha2.EtcdSnapshotSchedule{}
			if err := k8sClient.Get(t.Context(), key, s); err != nil {
				t.Fatal(err)
			}
			requireReady(t, s, metav1.ConditionFalse, tc.reason, tc.contains)
			if n := len(w.snapshots()); n != 0 {
				t.Errorf("%d snapshots, want none", n)
			}
		})
	}
}

// TestScheduleHistoryLimits: final snapshots beyond the limits are deleted, newest kept; the
// newest failing turns Ready False with the snapshot's own reason.
func TestScheduleHistoryLimits(t *testing.T) {
	t.Parallel()
	w := newScheduleWorld(t, true)
	w.schedule(func(s *etcdv1alpha2.EtcdSnapshotScheduleSpec) {
		s.SuccessfulSnapshotsHistoryLimit, s.FailedSnapshotsHistoryLimit = ptr.To[int32](2), ptr.To[int32](1)
		s.ConcurrencyPolicy = etcdv1alpha2.ConcurrencyAllow
	})
	// Every pass at second 59 of its minute, the case that once took a sixth snapshot: the last
	// pass then stepped one second, into the next slot.
	w.atSecond(59)
	phases := []etcdv1alpha2.SnapshotPhase{etcdv1alpha2.SnapshotPhaseComplete, etcdv1alpha2.SnapshotPhaseFailed, etcdv1alpha2.SnapshotPhaseComplete,
		etcdv1alpha2.SnapshotPhaseComplete, etcdv1alpha2.SnapshotPhaseFailed}
	var names []string
	for _, phase := range phases {
		st := w.pass(time.Minute)
		snaps := w.snapshots()
		if len(snaps) == 0 {
			t.Fatalf("no snapshot; status %+v", st.Status)
		}
		newest := snaps[len(snaps)-1].Name
		names = append(names, newest)
		w.finish(newest, phase)
	}
	s := w.pass(0) // any step could cross into the next slot and take another snapshot
	var left []string
	for _, snap := range w.snapshots() {
		left = append(left, snap.Name)
	}
	if want := []string{names[2], names[3], names[4]}; !slices.Equal(left, want) {
		t.Errorf("snapshots left %v, want %v (the newest two Complete and the newest Failed)", left, want)
	}
	requireReady(t, s, metav1.ConditionFalse, etcdsnapshot.ReasonLastRunFailed, "JobFailed")
}
