package etcdsnapshot

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cronslot"
	"github.com/etcd-operator/etcd-operator/internal/retention"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// ScheduleControllerName names the EtcdSnapshotSchedule controller in logs, metrics and Events.
const ScheduleControllerName = "etcdsnapshotschedule"

// eventSnapshotScheduled announces a snapshot a schedule created.
const eventSnapshotScheduled = "SnapshotScheduled"

// slotMargin is added to the wait for the next slot: a pass that runs a hair early would find
// nothing due and wait a whole period.
const slotMargin = time.Second

// The history limits' defaults, also written by the API server (docs/api.md,
// "EtcdSnapshotSchedule"); repeated here for objects created before the defaults existed.
const (
	defaultSuccessfulHistory = 7
	defaultFailedHistory     = 3
)

// ScheduleReconciler reconciles EtcdSnapshotSchedules. Build it with NewSchedule.
type ScheduleReconciler struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
}

// NewSchedule returns a ScheduleReconciler; clk nil means the wall clock.
func NewSchedule(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock) *ScheduleReconciler {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &ScheduleReconciler{client: c, recorder: recorder, clock: clk}
}

// SetupScheduleWithManager registers the EtcdSnapshotSchedule controller: For
// EtcdSnapshotSchedule, Owns EtcdSnapshot (a snapshot finishing updates active and
// lastSuccessfulTime).
func SetupScheduleWithManager(mgr ctrl.Manager) error {
	r := NewSchedule(mgr.GetClient(), mgr.GetEventRecorder(ScheduleControllerName), nil)
	if err := ctrl.NewControllerManagedBy(mgr).Named(ScheduleControllerName).
		For(&etcdv1alpha2.EtcdSnapshotSchedule{}).Owns(&etcdv1alpha2.EtcdSnapshot{}).Complete(r); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", ScheduleControllerName, err)
	}
	return nil
}

// A snapshot's ownerReference to its schedule sets blockOwnerDeletion, which an API server
// enforcing owner-reference permissions admits only from a user who may update the schedule's
// finalizers: hence etcdsnapshotschedules/finalizers update.
//
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshotschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshotschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshotschedules/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;list;watch;create;delete

// Reconcile runs one pass over one EtcdSnapshotSchedule (docs/backup-restore.md, "Schedules"):
//
//  1. Fetch the schedule; NotFound → done (its snapshots go with it: they are owned; their
//     files stay).
//  2. List its snapshots (by label, controlled by it); parse the schedule in its zone
//     (Ready=False/InvalidSchedule when it does not parse); check the cluster exists
//     (Ready=False/ClusterNotFound, nothing created, when it does not).
//  3. Plan the slot (internal/cronslot) and create its EtcdSnapshot under its deterministic
//     name; AlreadyExists is success.
//  4. Delete final snapshots beyond the history limits (internal/retention.Excess).
//  5. Patch status once if it changed; requeue at the next slot.
func (r *ScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &etcdv1alpha2.EtcdSnapshotSchedule{}
	if err := r.client.Get(ctx, req.NamespacedName, s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	status := s.Status.DeepCopy()
	snapshots, err := r.snapshotsOf(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	result, err := r.schedule(ctx, s, status, &snapshots)
	if err == nil {
		err = r.trimHistory(ctx, s, snapshots)
	}
	summarise(status, s, snapshots)
	if !equality.Semantic.DeepEqual(s.Status, *status) {
		original := s.DeepCopy()
		s.Status = *status
		if perr := r.client.Status().Patch(ctx, s, client.MergeFrom(original)); perr != nil && err == nil {
			err = fmt.Errorf("patching EtcdSnapshotSchedule status: %w", perr)
		}
	}
	return step.Finish(step.Requeue(result.RequeueAfter, "next slot"), err)
}

// schedule creates the due slot's snapshot, if any, and sets the Ready condition.
func (r *ScheduleReconciler) schedule(ctx context.Context, s *etcdv1alpha2.EtcdSnapshotSchedule, status *etcdv1alpha2.EtcdSnapshotScheduleStatus,
	snapshots *[]etcdv1alpha2.EtcdSnapshot) (ctrl.Result, error) {
	sched, err := cronslot.Parse(s.Spec.Schedule, ptr.Deref(s.Spec.TimeZone, ""))
	if err != nil {
		setScheduleReady(status, s, metav1.ConditionFalse, ReasonInvalidSchedule, err.Error()+"; fix spec.schedule or spec.timeZone")
		return ctrl.Result{}, nil
	}
	now := r.clock.Now()
	since := s.CreationTimestamp.Time
	if status.LastScheduleTime != nil {
		since = status.LastScheduleTime.Time
	}
	d := cronslot.Plan(cronslot.Input{Schedule: sched, Since: since, Now: now, Suspend: s.Spec.Suspend,
		Concurrency: s.Spec.ConcurrencyPolicy, StartingDeadline: s.Spec.StartingDeadlineSeconds, Active: activeCount(*snapshots)})
	result := ctrl.Result{RequeueAfter: d.NextSlot.Sub(now) + slotMargin}
	if s.Spec.Suspend {
		setScheduleReady(status, s, metav1.ConditionFalse, ReasonSuspended, "spec.suspend is true: no snapshot is taken; set it to false to resume")
		return result, nil
	}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name}, &etcdv1alpha2.EtcdCluster{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return result, fmt.Errorf("reading EtcdCluster %s: %w", s.Spec.ClusterRef.Name, err)
		}
		setScheduleReady(status, s, metav1.ConditionFalse, ReasonClusterNotFound,
			fmt.Sprintf("EtcdCluster %s does not exist in namespace %s: no snapshot is taken; create it or fix spec.clusterRef.name", s.Spec.ClusterRef.Name, s.Namespace))
		return result, nil
	}
	if d.Create {
		snap, err := r.create(ctx, s, d.Slot)
		if err != nil {
			setScheduleReady(status, s, metav1.ConditionFalse, ReasonSnapshotNotCreated, err.Error()+"; retried with back-off")
			return result, err
		}
		if snap != nil {
			*snapshots = append(*snapshots, *snap)
		}
		status.LastScheduleTime = &metav1.Time{Time: d.Slot}
	}
	msg := "next snapshot at " + d.NextSlot.UTC().Format(time.RFC3339)
	if d.Skipped != "" {
		msg = fmt.Sprintf("skipped the slot %s: %s; %s", d.Slot.UTC().Format(time.RFC3339), d.Skipped, msg)
	}
	setScheduleReady(status, s, metav1.ConditionTrue, ReasonScheduled, msg)
	return result, nil
}

// create creates the snapshot of slot; nil when it existed already.
func (r *ScheduleReconciler) create(ctx context.Context, s *etcdv1alpha2.EtcdSnapshotSchedule, slot time.Time) (*etcdv1alpha2.EtcdSnapshot, error) {
	snap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: cronslot.Name(s.Name, slot),
			Labels: map[string]string{etcdv1alpha2.LabelSchedule: s.Name, etcdv1alpha2.LabelCluster: s.Spec.ClusterRef.Name}},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: s.Spec.ClusterRef, Destination: *s.Spec.Destination.DeepCopy()},
	}
	if err := controllerutil.SetControllerReference(s, snap, r.client.Scheme()); err != nil {
		return nil, fmt.Errorf("owning EtcdSnapshot %s: %w", snap.Name, err)
	}
	if err := r.client.Create(ctx, snap); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("creating EtcdSnapshot %s: %w", snap.Name, err)
	}
	r.recorder.Eventf(s, snap, corev1.EventTypeNormal, eventSnapshotScheduled, eventSnapshotScheduled,
		"created EtcdSnapshot %s for the slot %s", snap.Name, slot.UTC().Format(time.RFC3339))
	return snap, nil
}

// snapshotsOf lists the schedule's snapshots: labelled with its name and controlled by it.
func (r *ScheduleReconciler) snapshotsOf(ctx context.Context, s *etcdv1alpha2.EtcdSnapshotSchedule) ([]etcdv1alpha2.EtcdSnapshot, error) {
	var list etcdv1alpha2.EtcdSnapshotList
	if err := r.client.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels{etcdv1alpha2.LabelSchedule: s.Name}); err != nil {
		return nil, fmt.Errorf("listing the snapshots of EtcdSnapshotSchedule %s: %w", s.Name, err)
	}
	var out []etcdv1alpha2.EtcdSnapshot
	for _, snap := range list.Items {
		if ref := metav1.GetControllerOf(&snap); ref != nil && ref.UID == s.UID {
			out = append(out, snap)
		}
	}
	return out, nil
}

// trimHistory deletes the final snapshots beyond the history limits; their files stay (what
// stays at the destination is spec.retention's business).
func (r *ScheduleReconciler) trimHistory(ctx context.Context, s *etcdv1alpha2.EtcdSnapshotSchedule, snapshots []etcdv1alpha2.EtcdSnapshot) error {
	objects := make([]retention.Object, 0, len(snapshots))
	for i := range snapshots {
		objects = append(objects, historyEntry(&snapshots[i]))
	}
	succeeded := int(ptr.Deref(s.Spec.SuccessfulSnapshotsHistoryLimit, defaultSuccessfulHistory))
	failed := int(ptr.Deref(s.Spec.FailedSnapshotsHistoryLimit, defaultFailedHistory))
	for _, name := range retention.Excess(objects, succeeded, failed) {
		snap := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name}}
		if err := r.client.Delete(ctx, snap); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting EtcdSnapshot %s beyond the history limit: %w", name, err)
		}
	}
	return nil
}
