package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// SnapshotControllerName names the EtcdSnapshot controller in logs, metrics and Events.
const SnapshotControllerName = "etcdsnapshot"

// Events of a snapshot's end, and of the schedule's retention that ran after it
// (docs/backup-restore.md, "Retention").
const (
	eventSnapshotStored  = "SnapshotStored"
	eventSnapshotFailed  = "SnapshotFailed"
	eventSnapshotsPruned = "SnapshotsPruned"
	eventRetentionFailed = "RetentionFailed"
)

// SnapshotReconciler reconciles EtcdSnapshots. Build it with NewSnapshot.
type SnapshotReconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	clock     clock.PassiveClock
	// image is the operator's own image, which the Job runs; "" when unknown.
	image string
}

// NewSnapshot returns a SnapshotReconciler. apiReader reads past the cache (a Job the cache
// does not show yet is not lost; the Pods of a Job are not cached); clk nil means the wall
// clock; image is the operator's own image.
func NewSnapshot(c client.Client, apiReader client.Reader, recorder events.EventRecorder, clk clock.PassiveClock, image string) *SnapshotReconciler {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &SnapshotReconciler{client: c, apiReader: apiReader, recorder: recorder, clock: clk, image: image}
}

// SetupSnapshotWithManager registers the EtcdSnapshot controller: For EtcdSnapshot, Owns Job.
func SetupSnapshotWithManager(mgr ctrl.Manager, image string) error {
	r := NewSnapshot(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(SnapshotControllerName), nil, image)
	if err := ctrl.NewControllerManagedBy(mgr).Named(SnapshotControllerName).
		For(&etcdv1alpha2.EtcdSnapshot{}).Owns(&batchv1.Job{}).Complete(r); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", SnapshotControllerName, err)
	}
	return nil
}

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshotschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets;persistentvolumeclaims,verbs=get;list;watch

// Reconcile runs one pass over one EtcdSnapshot (docs/backup-restore.md, "How a snapshot is
// taken"): observe the snapshot, its cluster, the Secrets and claim its Job needs, and the Job
// with its agent's report; let internal/backup.Plan decide; create the Job when it says so; patch
// the status once, and announce and count (docs/backup-restore.md, "Metrics") the move to a
// final phase. A final phase is never left.
func (r *SnapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &etcdv1alpha2.EtcdSnapshot{}
	if err := r.client.Get(ctx, req.NamespacedName, s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if backup.Final(s.Status.Phase) || !s.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	o, err := r.observe(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := backup.Plan(o.input)
	if d.CreateJob {
		switch err := r.createJob(ctx, s, o); {
		case errors.Is(err, errJobNotOurs):
			d = backup.Decision{Phase: etcdv1alpha2.SnapshotPhaseFailed, Reason: backup.ReasonJobNameTaken,
				Message: err.Error() + ": delete that Job, or take the snapshot under another EtcdSnapshot name"}
		case err != nil:
			return step.Finish(step.Result{}, err)
		}
	}
	return step.Finish(step.Requeue(d.RequeueAfter, d.Reason), r.writeStatus(ctx, s, d))
}

// writeStatus records the decision: phase, Ready, the times and the artifact, in one patch, and
// announces a final phase with an Event.
func (r *SnapshotReconciler) writeStatus(ctx context.Context, s *etcdv1alpha2.EtcdSnapshot, d backup.Decision) error {
	status := s.Status.DeepCopy()
	now := metav1.NewTime(r.clock.Now())
	status.Phase = d.Phase
	if d.Phase == etcdv1alpha2.SnapshotPhaseStarted && status.StartedAt == nil {
		status.StartedAt = &now
	}
	if backup.Final(d.Phase) {
		status.CompletedAt = &now
		status.Artifact = d.Artifact
	}
	ready := metav1.ConditionFalse
	if d.Phase == etcdv1alpha2.SnapshotPhaseComplete {
		ready = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionReady, Status: ready, Reason: d.Reason,
		Message: d.Message, ObservedGeneration: s.Generation})
	if equality.Semantic.DeepEqual(s.Status, *status) {
		return nil
	}
	original := s.DeepCopy()
	s.Status = *status
	if err := r.client.Status().Patch(ctx, s, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching EtcdSnapshot status: %w", err)
	}
	// Events and metrics follow the patch that made the transition: a pass from a stale cache
	// conflicts, and a pass over a final snapshot (after a restart too) never gets here, so
	// each snapshot is announced and counted once.
	switch d.Phase {
	case etcdv1alpha2.SnapshotPhaseComplete:
		r.recorder.Eventf(s, nil, corev1.EventTypeNormal, eventSnapshotStored, eventSnapshotStored, "%s", backup.StoredMessage(d.Artifact))
		r.announcePruning(s, d.Pruning)
		if status.StartedAt != nil {
			// As the status stores them: in whole seconds.
			took := status.CompletedAt.Rfc3339Copy().Sub(status.StartedAt.Rfc3339Copy().Time)
			metrics.SnapshotCompleted(s.Namespace, s.Spec.ClusterRef.Name, took)
		}
	case etcdv1alpha2.SnapshotPhaseFailed:
		r.recorder.Eventf(s, nil, corev1.EventTypeWarning, eventSnapshotFailed, eventSnapshotFailed, "%s", eventNote(d.Reason+": "+d.Message))
		metrics.SnapshotFailed(s.Namespace, s.Spec.ClusterRef.Name, backup.MetricReason(d.Reason))
	}
	return nil
}

// announcePruning emits what the schedule's retention did after the snapshot was stored: the
// artifacts it deleted (Normal), and why it failed (Warning: the schedule keeps more files than
// its retention says until someone fixes the cause, e.g. a missing s3:DeleteObject).
func (r *SnapshotReconciler) announcePruning(s *etcdv1alpha2.EtcdSnapshot, p backup.Pruning) {
	if p.Count > 0 {
		r.recorder.Eventf(s, nil, corev1.EventTypeNormal, eventSnapshotsPruned, eventSnapshotsPruned, "%s",
			eventNote(backup.Pruning{Pruned: p.Pruned, Count: p.Count}.Summary()))
	}
	if p.Error != "" {
		r.recorder.Eventf(s, nil, corev1.EventTypeWarning, eventRetentionFailed, eventRetentionFailed, "%s",
			eventNote(backup.Pruning{Error: p.Error}.Summary()))
	}
}

// maxEventNote is the longest note the API server admits in an events.k8s.io/v1 Event; a longer
// one is refused and the Event lost. The agent's messages may be up to 4 KiB.
const maxEventNote = 1024

// eventNote cuts note to maxEventNote bytes at a rune boundary, marking the cut.
func eventNote(note string) string {
	const mark = "…"
	if len(note) <= maxEventNote {
		return note
	}
	cut := maxEventNote - len(mark)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + mark
}
