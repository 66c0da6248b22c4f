package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
)

// ControllerName names the controller in logs, metrics and Events.
const ControllerName = "etcdcluster"

// Requeue intervals (behaviour.md §24). Watches drive most passes; these cover external state.
const (
	// healthResync is how often an idle cluster is looked at again, to notice etcd-side changes
	// no watch reports. The work queue adds no jitter, so the controller does (±10 %).
	healthResync = 30 * time.Second
	// conflictRetry is how soon a pass that hit a write conflict runs again.
	conflictRetry = time.Second
	// errorBackoffBase and errorBackoffMax bound the back-off after a failed pass
	// (behaviour.md §1): the library's default cap of about 16 minutes is too slow for a
	// cluster that lost a member.
	errorBackoffBase = 5 * time.Millisecond
	errorBackoffMax  = 5 * time.Minute
)

// clientPool hands out one etcd client per cluster, reused across passes (etcdclient.Pool).
type clientPool interface {
	Get(ctx context.Context, cluster string, cfg etcdclient.Config) (etcdclient.Client, error)
	Forget(cluster string) error
}

// Reconciler reconciles EtcdClusters. Build it with New.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	pool      clientPool
	clock     clock.PassiveClock
	// orphanGrace overrides membership.DefaultOrphanMemberGrace.
	orphanGrace time.Duration
	// certManager answers whether cert-manager's API is served, for clusters whose spec.tls
	// asks cert-manager for certificates.
	certManager CertManagerProbe
	// jitter returns the resync interval; tests pin it.
	jitter func(time.Duration) time.Duration
	// views receives what each pass saw of every member's endpoint, for the EtcdMember
	// controller's Healthy; nil publishes nothing.
	views *etcdview.Board
	// imageRepository is the etcd image repository members run (--etcd-image-repository); it
	// enters the template hash the controller authorises, so it must be the member
	// controller's.
	imageRepository string
	// guardImage is the image holding the data-dir guard of PVC members
	// (--data-guard-image); it enters their template hash, so it must be the member
	// controller's too.
	guardImage string

	mu sync.Mutex
	// firstSeen is when each cluster's etcd member IDs were first observed (orphan grace).
	firstSeen map[types.NamespacedName]map[uint64]time.Time
	// startedSeen is when each cluster's etcd members were first seen started (strict
	// reconfiguration check, membership.StrictReconfigSettle).
	startedSeen map[types.NamespacedName]map[uint64]time.Time
	// pendingWarned is the generation a SpecChangePending Event was last emitted for.
	pendingWarned map[types.NamespacedName]int64
	// blockedWarned is the refusal a QuorumGateBlocked Event was last emitted for.
	blockedWarned map[types.NamespacedName]string
	// versionWarned is the refusal a VersionChangeRejected Event was last emitted for.
	versionWarned map[types.NamespacedName]string
	// rolling holds the clusters this process restarted a member of since they last
	// converged: their convergence completes a rolling update (one RollingUpdateCompleted).
	rolling map[types.NamespacedName]bool
}

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithClock replaces the wall clock (tests use a fake one).
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithOrphanMemberGrace replaces membership.DefaultOrphanMemberGrace.
func WithOrphanMemberGrace(d time.Duration) Option { return func(r *Reconciler) { r.orphanGrace = d } }

// WithEtcdViews publishes each pass's view of every member's endpoint on board.
func WithEtcdViews(board *etcdview.Board) Option { return func(r *Reconciler) { r.views = board } }

// WithCertManagerProbe replaces the discovery-backed probe NewFromManager builds.
func WithCertManagerProbe(p CertManagerProbe) Option {
	return func(r *Reconciler) { r.certManager = p }
}

// WithImageRepository sets the etcd image repository the template hash is computed with; empty
// means desired.DefaultImageRepository. It must match the EtcdMember controller's.
func WithImageRepository(repo string) Option { return func(r *Reconciler) { r.imageRepository = repo } }

// WithGuardImage sets the data-dir guard image the template hash of PVC members is computed
// with; empty means none. It must match the EtcdMember controller's, or every PVC member would
// be authorised a hash its Pod never carries.
func WithGuardImage(image string) Option { return func(r *Reconciler) { r.guardImage = image } }

// WithResyncJitter replaces the ±10 % jitter applied to the idle resync interval.
func WithResyncJitter(f func(time.Duration) time.Duration) Option {
	return func(r *Reconciler) { r.jitter = f }
}

// New returns a Reconciler. c is the manager's (cached) client, apiReader an uncached reader used
// before every GenerateName create, pool the etcd client pool, recorder the Event recorder.
func New(c client.Client, apiReader client.Reader, recorder events.EventRecorder, pool clientPool, opts ...Option) *Reconciler {
	r := &Reconciler{
		client: c, apiReader: apiReader, recorder: recorder, pool: pool,
		clock:         clock.RealClock{},
		jitter:        defaultJitter,
		firstSeen:     map[types.NamespacedName]map[uint64]time.Time{},
		startedSeen:   map[types.NamespacedName]map[uint64]time.Time{},
		pendingWarned: map[types.NamespacedName]int64{},
		blockedWarned: map[types.NamespacedName]string{},
		versionWarned: map[types.NamespacedName]string{},
		rolling:       map[types.NamespacedName]bool{},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// NewFromManager returns a Reconciler wired to mgr's clients and recorder, with a cert-manager
// probe that asks mgr's API server through discovery (options may replace it).
func NewFromManager(mgr ctrl.Manager, pool clientPool, opts ...Option) *Reconciler {
	probe := WithCertManagerProbe(defaultCertManagerProbe(mgr.GetConfig(), clock.RealClock{}))
	return New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(ControllerName), pool, append([]Option{probe}, opts...)...)
}

// SetupWithManager registers the controller: For EtcdCluster (spec and metadata changes only,
// so the controller's own status patches do not trigger it); Owns EtcdMember (every change,
// status included: member status updates drive bootstrap and scaling), Service and
// PodDisruptionBudget; Pods and PVCs by cluster label, mapped to their cluster.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	byClusterLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[etcdv1alpha2.LabelCluster]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&etcdv1alpha2.EtcdCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{},
			deadlineChanged()))).
		Owns(&etcdv1alpha2.EtcdMember{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, byClusterLabel).
		Watches(&corev1.PersistentVolumeClaim{}, byClusterLabel).
		WithOptions(controller.Options{
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](errorBackoffBase, errorBackoffMax),
		}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", ControllerName, err)
	}
	return nil
}

// deadlineChanged passes status updates that move status.progressDeadline: a user (or kubectl
// etcd retry) moving it into the past asks for adoption now, not at the next resync. The
// controller's own arming and clearing pass too, once each, and cause no loop.
func deadlineChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*etcdv1alpha2.EtcdCluster)
		n, ok2 := e.ObjectNew.(*etcdv1alpha2.EtcdCluster)
		if !ok1 || !ok2 {
			return false
		}
		a, b := o.Status.ProgressDeadline, n.Status.ProgressDeadline
		return (a == nil) != (b == nil) || (a != nil && !a.Equal(b))
	}}
}

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete

// Reconcile runs one pass over one EtcdCluster:
//
//  1. Fetch the cluster; NotFound or being deleted → forget its etcd client and stop (no
//     cluster finalizer: garbage collection removes members, Services, PDB and PVCs).
//  2. Annotation adoption-in-progress → stop without any write.
//  3. Build the scope once: EtcdMembers, Pods, PVCs, StorageClasses (only while a PVC is
//     smaller than the latched size), the TLS material spec.tls asks for that is
//     missing (cert-manager's API, Secrets) and the etcd view (MemberList, Status of every
//     member endpoint, alarms, leader) through the pooled client.
//  4. Ensure the always-on objects: headless and client Services.
//  5. Latch or adopt the target (status.observed, progressDeadline), after checking a new
//     spec.version against the running versions: a refused spec is not adopted
//     (Progressing=False/VersionChangeRejected, one Warning per refusal). An adoption is written to
//     status at once, with its Progressing condition, and the pass ends there (requeue after
//     nextStepDelay): nothing acts on a target that a crash could still lose.
//  6. Sync member status fields memberID, isVoter and version from etcd, and the in-place part
//     of the latched template (additionalMetadata, imagePullSecrets) onto existing members;
//     grow member PVCs smaller than the latched storage.size when their StorageClass allows
//     expansion, and record the size on a member once its volume reports it (behaviour.md §13).
//  7. Plan one step with membership.Next and execute it (quorum-gated), with an Event.
//  8. Always (deferred, every path): compute status and conditions, apply the PDB, patch status
//     once if it changed (an adopting pass already wrote it in step 5), record metrics.
//  9. Requeue: event-driven; otherwise the interval the planner asked for; otherwise the
//     jittered resync.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	log := logf.FromContext(ctx)
	cluster := &etcdv1alpha2.EtcdCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading EtcdCluster %s: %w", req.NamespacedName, err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if _, ok := cluster.Annotations[etcdv1alpha2.AnnotationAdoptionInProgress]; ok {
		log.V(1).Info("Skipping a cluster under adoption")
		return ctrl.Result{}, nil
	}

	p := &pass{r: r, cluster: cluster, original: cluster.DeepCopy(), now: r.clock.Now()}
	defer func() {
		start := time.Now()
		if err := p.finish(ctx); err != nil {
			retErr = errors.Join(retErr, err)
		}
		metrics.StepDuration(ControllerName, "status", time.Since(start))
		result, retErr = classify(ctx, result, retErr)
		if retErr == nil && result.RequeueAfter == 0 {
			result.RequeueAfter = r.jitter(healthResync)
		}
	}()

	for _, step := range []struct {
		name string
		run  func(context.Context) (ctrl.Result, error)
	}{
		{"scope", p.buildScope},
		{"services", p.ensureServices},
		{"lock", p.latch},
		{"adopt", p.adopt},
		{"memberStatus", p.syncMemberStatus},
		{"inPlace", p.syncInPlaceTemplate},
		{"storage", p.expandStorage},
		{"plan", p.planAndAct},
	} {
		start := time.Now()
		res, err := step.run(ctx)
		metrics.StepDuration(ControllerName, step.name, time.Since(start))
		if err != nil || res.RequeueAfter > 0 {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// forget drops everything held for a deleted cluster: its etcd client, timers and metrics.
func (r *Reconciler) forget(key types.NamespacedName) {
	_ = r.pool.Forget(key.String()) // closing an idle client cannot fail in a way worth retrying
	r.mu.Lock()
	delete(r.firstSeen, key)
	delete(r.startedSeen, key)
	delete(r.pendingWarned, key)
	delete(r.blockedWarned, key)
	delete(r.versionWarned, key)
	delete(r.rolling, key)
	r.mu.Unlock()
	metrics.ForgetCluster(key.String())
}

// errWaiting marks a step that must wait for external state: requeue after, no error, no Event.
type errWaiting struct {
	after time.Duration
	msg   string
}

func (e *errWaiting) Error() string { return e.msg }

// classify turns the error classes of style.md rule 9 into a result: waiting → RequeueAfter
// without error; conflicts → quiet requeue; terminal and transient errors are returned.
func classify(ctx context.Context, res ctrl.Result, err error) (ctrl.Result, error) {
	if err == nil {
		return res, nil
	}
	var w *errWaiting
	if errors.As(err, &w) {
		logf.FromContext(ctx).V(1).Info("Waiting", "reason", w.msg, "after", w.after)
		return ctrl.Result{RequeueAfter: w.after}, nil
	}
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}
