package etcddefrag

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cronslot"
	"github.com/etcd-operator/etcd-operator/internal/defrag"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// PolicyControllerName names the EtcdDefragPolicy controller in logs, metrics and Events.
const PolicyControllerName = "etcddefragpolicy"

// eventDefragScheduled announces a run a policy created.
const eventDefragScheduled = "DefragScheduled"

// slotMargin is added to the wait for the next slot: a pass that runs a hair early would find
// nothing due and wait a whole period.
const slotMargin = time.Second

// PolicyReconciler reconciles EtcdDefragPolicies. Build it with NewPolicy.
type PolicyReconciler struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
}

// NewPolicy returns a PolicyReconciler; clk nil means the wall clock.
func NewPolicy(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock) *PolicyReconciler {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &PolicyReconciler{client: c, recorder: recorder, clock: clk}
}

// SetupPolicyWithManager registers the EtcdDefragPolicy controller: For EtcdDefragPolicy,
// Owns EtcdDefrag (a run finishing updates active and lastSuccessfulTime).
func SetupPolicyWithManager(mgr ctrl.Manager) error {
	r := NewPolicy(mgr.GetClient(), mgr.GetEventRecorder(PolicyControllerName), nil)
	if err := ctrl.NewControllerManagedBy(mgr).Named(PolicyControllerName).
		For(&etcdv1alpha2.EtcdDefragPolicy{}).Owns(&etcdv1alpha2.EtcdDefrag{}).Complete(r); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", PolicyControllerName, err)
	}
	return nil
}

// A run's ownerReference to its policy sets blockOwnerDeletion, which an API server enforcing
// owner-reference permissions (OwnerReferencesPermissionEnforcement, on in the local cluster)
// admits only from a user who may update the policy's finalizers: hence
// etcddefragpolicies/finalizers update.
//
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefragpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefragpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefragpolicies/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefrags,verbs=get;list;watch;create;delete

// Reconcile runs one pass over one EtcdDefragPolicy (docs/defrag.md, "EtcdDefragPolicy"):
//
//  1. Fetch the policy; NotFound → done (its runs go with it: they are owned).
//  2. List its runs (by label, controlled by it); parse the schedule (Ready=False/
//     InvalidSchedule when it does not parse).
//  3. Plan the slot (internal/cronslot.Plan) and create its run under its deterministic
//     name; AlreadyExists is success.
//  4. Delete final runs beyond historyLimit.
//  5. Patch status once if it changed; requeue at the next slot.
func (r *PolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &etcdv1alpha2.EtcdDefragPolicy{}
	if err := r.client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := r.clock.Now()
	status := p.Status.DeepCopy()
	runs, err := r.runsOf(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	var result ctrl.Result
	sched, perr := cronslot.Parse(p.Spec.Schedule, "")
	if perr != nil {
		setPolicyReady(status, p, metav1.ConditionFalse, defrag.ReasonInvalidSchedule, perr.Error()+"; fix spec.schedule")
	} else {
		result, err = r.schedule(ctx, p, sched, status, &runs, now)
	}
	if err == nil {
		err = r.prune(ctx, p, runs)
	}
	summarise(status, runs)
	if !equality.Semantic.DeepEqual(p.Status, *status) {
		original := p.DeepCopy()
		p.Status = *status
		if perr := r.client.Status().Patch(ctx, p, client.MergeFrom(original)); perr != nil && err == nil {
			err = fmt.Errorf("patching EtcdDefragPolicy status: %w", perr)
		}
	}
	return step.Finish(step.Requeue(result.RequeueAfter, "next slot"), err)
}

// schedule creates the due slot's run, if any, and sets the Ready condition.
func (r *PolicyReconciler) schedule(ctx context.Context, p *etcdv1alpha2.EtcdDefragPolicy, sched interface{ Next(time.Time) time.Time },
	status *etcdv1alpha2.EtcdDefragPolicyStatus, runs *[]etcdv1alpha2.EtcdDefrag, now time.Time) (ctrl.Result, error) {
	since := p.CreationTimestamp.Time
	if status.LastScheduleTime != nil {
		since = status.LastScheduleTime.Time
	}
	active := 0
	for _, d := range *runs {
		if !defrag.Final(d.Status.Phase) {
			active++
		}
	}
	d := cronslot.Plan(cronslot.Input{Schedule: sched, Since: since, Now: now, Suspend: p.Spec.Suspend != nil && *p.Spec.Suspend,
		Concurrency: p.Spec.ConcurrencyPolicy, StartingDeadline: p.Spec.StartingDeadlineSeconds, Active: active})
	result := ctrl.Result{RequeueAfter: d.NextSlot.Sub(now) + slotMargin}
	switch {
	case p.Spec.Suspend != nil && *p.Spec.Suspend:
		setPolicyReady(status, p, metav1.ConditionFalse, defrag.ReasonSuspended, "spec.suspend is true: no run is created; set it to false to resume")
		return result, nil
	case d.Create:
		run, err := r.create(ctx, p, d.Slot)
		if err != nil {
			setPolicyReady(status, p, metav1.ConditionFalse, defrag.ReasonRunNotCreated, err.Error()+"; retried with back-off")
			return result, err
		}
		if run != nil {
			*runs = append(*runs, *run)
		}
		status.LastScheduleTime = &metav1.Time{Time: d.Slot}
	}
	msg := "next run at " + d.NextSlot.UTC().Format(time.RFC3339)
	if d.Skipped != "" {
		msg = fmt.Sprintf("skipped the slot %s: %s; %s", d.Slot.UTC().Format(time.RFC3339), d.Skipped, msg)
	}
	setPolicyReady(status, p, metav1.ConditionTrue, defrag.ReasonScheduled, msg)
	return result, nil
}

// create creates the run of slot; nil when it existed already.
func (r *PolicyReconciler) create(ctx context.Context, p *etcdv1alpha2.EtcdDefragPolicy, slot time.Time) (*etcdv1alpha2.EtcdDefrag, error) {
	run := &etcdv1alpha2.EtcdDefrag{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: cronslot.Name(p.Name, slot),
			Labels: map[string]string{etcdv1alpha2.LabelDefragPolicy: p.Name, etcdv1alpha2.LabelCluster: p.Spec.ClusterRef.Name}},
		Spec: etcdv1alpha2.EtcdDefragSpec{ClusterRef: p.Spec.ClusterRef, Rule: p.Spec.Rule.DeepCopy(), TTLSecondsAfterFinished: p.Spec.TTLSecondsAfterFinished},
	}
	if err := controllerutil.SetControllerReference(p, run, r.client.Scheme()); err != nil {
		return nil, fmt.Errorf("owning EtcdDefrag %s: %w", run.Name, err)
	}
	if err := r.client.Create(ctx, run); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("creating EtcdDefrag %s: %w", run.Name, err)
	}
	r.recorder.Eventf(p, run, corev1.EventTypeNormal, eventDefragScheduled, eventDefragScheduled, "created EtcdDefrag %s for the slot %s", run.Name, slot.UTC().Format(time.RFC3339))
	return run, nil
}

// runsOf lists the policy's runs: labelled with its name and controlled by it.
func (r *PolicyReconciler) runsOf(ctx context.Context, p *etcdv1alpha2.EtcdDefragPolicy) ([]etcdv1alpha2.EtcdDefrag, error) {
	var list etcdv1alpha2.EtcdDefragList
	if err := r.client.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingLabels{etcdv1alpha2.LabelDefragPolicy: p.Name}); err != nil {
		return nil, fmt.Errorf("listing the runs of EtcdDefragPolicy %s: %w", p.Name, err)
	}
	out := slices.DeleteFunc(list.Items, func(d etcdv1alpha2.EtcdDefrag) bool {
		ref := metav1.GetControllerOf(&d)
		return ref == nil || ref.UID != p.UID
	})
	return out, nil
}

// prune deletes the final runs beyond historyLimit.
func (r *PolicyReconciler) prune(ctx context.Context, p *etcdv1alpha2.EtcdDefragPolicy, runs []etcdv1alpha2.EtcdDefrag) error {
	limit := defrag.DefaultHistoryLimit
	if p.Spec.HistoryLimit != nil {
		limit = int(*p.Spec.HistoryLimit)
	}
	for _, name := range defrag.Prune(runs, limit) {
		run := &etcdv1alpha2.EtcdDefrag{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name}}
		if err := r.client.Delete(ctx, run); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting EtcdDefrag %s beyond the history limit: %w", name, err)
		}
	}
	return nil
}

// summarise fills active and lastSuccessfulTime from the runs, and reports a failed last run.
func summarise(status *etcdv1alpha2.EtcdDefragPolicyStatus, runs []etcdv1alpha2.EtcdDefrag) {
	status.Active = nil
	var last *etcdv1alpha2.EtcdDefrag
	for i := range runs {
		d := &runs[i]
		if !defrag.Final(d.Status.Phase) {
			status.Active = append(status.Active, corev1.LocalObjectReference{Name: d.Name})
			continue
		}
		if d.Status.Phase == etcdv1alpha2.DefragPhaseComplete && d.Status.CompletedAt != nil &&
			(status.LastSuccessfulTime == nil || status.LastSuccessfulTime.Before(d.Status.CompletedAt)) {
			status.LastSuccessfulTime = d.Status.CompletedAt.DeepCopy()
		}
		if last == nil || completedBefore(last, d) {
			last = d
		}
	}
	slices.SortFunc(status.Active, func(a, b corev1.LocalObjectReference) int { return compareStrings(a.Name, b.Name) })
	ready := meta.FindStatusCondition(status.Conditions, etcdv1alpha2.ConditionReady)
	if last != nil && last.Status.Phase == etcdv1alpha2.DefragPhaseFailed && ready != nil && ready.Status == metav1.ConditionTrue {
		ready.Status, ready.Reason = metav1.ConditionFalse, defrag.ReasonLastRunFailed
		ready.Message = fmt.Sprintf("the last run, EtcdDefrag %s, failed: see its status.members; %s", last.Name, ready.Message)
	}
}

func completedBefore(a, b *etcdv1alpha2.EtcdDefrag) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if a.Status.CompletedAt != nil {
		ta = *a.Status.CompletedAt
	}
	if b.Status.CompletedAt != nil {
		tb = *b.Status.CompletedAt
	}
	return ta.Before(&tb) || (ta.Equal(&tb) && a.Name < b.Name)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func setPolicyReady(status *etcdv1alpha2.EtcdDefragPolicyStatus, p *etcdv1alpha2.EtcdDefragPolicy, st metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionReady, Status: st, Reason: reason, Message: msg, ObservedGeneration: p.Generation})
}
