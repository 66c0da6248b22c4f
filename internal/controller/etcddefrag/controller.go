package etcddefrag

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/defrag"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// ControllerName names the EtcdDefrag controller in logs, metrics and Events.
const ControllerName = "etcddefrag"

// Requeue intervals (docs/design/timings.md, "Defragmentation").
const (
	// healthPoll is how soon a run waiting on etcd (a member not healthy enough to be spared,
	// etcd not answering) looks again.
	healthPoll = 2 * time.Second
	// nextStepDelay is how soon the pass after a member's step runs: one member per pass.
	nextStepDelay = 50 * time.Millisecond
	// queuePoll is how soon a queued run looks again, besides the watches on its cluster and
	// on the other runs.
	queuePoll = 10 * time.Second
)

// etcdAPI lists the etcd calls this controller makes: reads, Defragment, the leadership move
// before the leader's turn and the NOSPACE disarm. No membership call.
type etcdAPI interface {
	MemberList(ctx context.Context) ([]etcdclient.Member, error)
	Status(ctx context.Context, endpoint string) (etcdclient.Status, error)
	AlarmList(ctx context.Context) ([]etcdclient.Alarm, error)
	AlarmDisarm(ctx context.Context, alarm etcdclient.Alarm) ([]etcdclient.Alarm, error)
	Defragment(ctx context.Context, endpoint string) error
	MoveLeader(ctx context.Context, to uint64) error
}

func asEtcdAPI(c etcdclient.Client) etcdAPI { return c }

// Reconciler reconciles EtcdDefrags. Build it with New.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	etcd      etcdclient.Clients[etcdAPI]
	clock     clock.PassiveClock
}

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithClock replaces the wall clock (tests use a fake one).
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// New returns a Reconciler. c is the manager's client, apiReader an uncached reader (the
// admission reads the other runs through it), pool the etcd client pool.
func New(c client.Client, apiReader client.Reader, recorder events.EventRecorder, pool etcdclient.Clients[etcdclient.Client], opts ...Option) *Reconciler {
	r := &Reconciler{client: c, apiReader: apiReader, recorder: recorder, clock: clock.RealClock{}, etcd: etcdclient.Narrow(pool, asEtcdAPI)}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetupWithManager registers an EtcdDefrag controller built from mgr's clients with pool: For
// EtcdDefrag; the other runs of the same cluster (one finishing admits the next) and the
// cluster (converging admits a Pending run).
func SetupWithManager(mgr ctrl.Manager, pool etcdclient.Clients[etcdclient.Client], opts ...Option) error {
	r := New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(ControllerName), pool, opts...)
	c := mgr.GetClient()
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&etcdv1alpha2.EtcdDefrag{}).
		Watches(&etcdv1alpha2.EtcdDefrag{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			d, ok := o.(*etcdv1alpha2.EtcdDefrag)
			if !ok || !defrag.Final(d.Status.Phase) {
				return nil
			}
			return waitingRuns(ctx, c, d.Namespace, d.Spec.ClusterRef.Name)
		})).
		Watches(&etcdv1alpha2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return waitingRuns(ctx, c, o.GetNamespace(), o.GetName())
		})).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", ControllerName, err)
	}
	return nil
}

// waitingRuns are the requests of cluster's runs that are Pending (or new).
func waitingRuns(ctx context.Context, c client.Client, ns, cluster string) []reconcile.Request {
	var list etcdv1alpha2.EtcdDefragList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, d := range list.Items {
		if d.Spec.ClusterRef.Name == cluster && !defrag.Final(d.Status.Phase) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}})
		}
	}
	return out
}

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefrags,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefrags/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one pass over one EtcdDefrag (docs/defrag.md):
//
//  1. Fetch the run; NotFound or being deleted → done.
//  2. A final run: delete it once ttlSecondsAfterFinished passed, else requeue for then. Done.
//  3. Observe: the cluster, its members and Pods, and etcd (MemberList, Status of every member,
//     alarms, leader), once.
//  4. Pending (or new): admit it (its turn, a converged cluster, etcd answering) and list its
//     members with the rule's verdict, or say why it waits.
//  5. Running: plan one step (internal/defrag.Next) and take it: defragment one member, move
//     leadership off the leader before its turn, skip a member, wait, or finish (disarming
//     NOSPACE first when every member is below the quota).
//  6. Always: patch status once if it changed; requeue as the step asked.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &etcdv1alpha2.EtcdDefrag{}
	if err := r.client.Get(ctx, req.NamespacedName, run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !run.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := r.clock.Now()
	if defrag.Final(run.Status.Phase) {
		return r.expire(ctx, run, now)
	}
	ctx = logf.IntoContext(ctx, logf.FromContext(ctx).WithValues("cluster", run.Spec.ClusterRef.Name))
	x := &pass{r: r, run: run, status: *run.Status.DeepCopy(), now: now}
	obs, err := r.observe(ctx, run, now)
	var res step.Result
	if err == nil {
		x.obs = obs
		if run.Status.Phase == etcdv1alpha2.DefragPhaseRunning {
			res, err = x.advance(ctx)
		} else {
			res, err = x.admit(ctx)
		}
	}
	return step.Finish(res, errors.Join(err, x.writeStatus(ctx)))
}

// expire deletes a final run whose ttlSecondsAfterFinished passed.
func (r *Reconciler) expire(ctx context.Context, run *etcdv1alpha2.EtcdDefrag, now time.Time) (ctrl.Result, error) {
	ttl := run.Spec.TTLSecondsAfterFinished
	if ttl == nil || run.Status.CompletedAt == nil {
		return ctrl.Result{}, nil
	}
	if left := run.Status.CompletedAt.Add(time.Duration(*ttl) * time.Second).Sub(now); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	if err := r.client.Delete(ctx, run, client.Preconditions{UID: &run.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("deleting EtcdDefrag %s after its TTL: %w", run.Name, err)
	}
	return ctrl.Result{}, nil
}
