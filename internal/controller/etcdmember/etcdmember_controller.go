package etcdmember

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// ControllerName names the controller in logs, metrics and as the Events' reporting controller.
const ControllerName = "etcdmember"

// Requeue intervals (docs/design/timings.md, "Requeue intervals"). Watches drive every other pass:
// Pods, PVCs, the EtcdMember and its parent EtcdCluster all trigger a reconcile when they change.
const (
	// memberRemovalPoll re-reads etcd's membership while a deletion waits for the EtcdCluster
	// controller's MemberRemove (the "membership step poll"): nothing in Kubernetes changes when
	// a member leaves etcd, so a watch cannot tell us.
	memberRemovalPoll = 2 * time.Second
	// etcdUnreachableRetry paces MemberList retries when no member endpoint answers.
	etcdUnreachableRetry = 10 * time.Second
	// secretWait paces retries while a TLS Secret the Pod mounts is missing (a fixed interval
	// rather than exponential back-off, so that a Secret created late is picked up promptly).
	secretWait = 10 * time.Second
	// conflictRetry requeues a create that met AlreadyExists for the member's own object, which
	// the cache does not show yet: the same "look again" as an API conflict, which step.Finish
	// requeues after the same interval.
	conflictRetry = step.ConflictRetry
	// createRetry paces retries of a Pod create the API server refused: the member is down
	// until it succeeds, and the refusal usually lifts without an event this controller sees.
	createRetry = 5 * time.Second
	// errorBackoffBase and errorBackoffMax bound the back-off after a failed pass, as in the
	// EtcdCluster controller: the library's default cap of about 16 minutes is too slow for a
	// member that has no Pod.
	errorBackoffBase = 5 * time.Millisecond
	errorBackoffMax  = 5 * time.Minute
)

// memberLister is the one etcd call this controller makes: reading the member list, to release
// the finalizer of a member being deleted. Without membership calls in its interface, the
// compiler holds it to never changing membership (docs/design/house-rules.md, rule 2).
type memberLister interface {
	MemberList(ctx context.Context) ([]etcdclient.Member, error)
}

// asMemberLister narrows a pooled client to the call this controller makes.
func asMemberLister(c etcdclient.Client) memberLister { return c }

// Reconciler reconciles EtcdMembers. Build it with New (or SetupWithManager).
type Reconciler struct {
	client          client.Client
	apiReader       client.Reader
	recorder        events.EventRecorder
	etcd            etcdclient.Clients[memberLister]
	clock           clock.PassiveClock
	imageRepository string
	// guardImage holds the data-dir guard of PVC members' Pods; empty runs them unguarded.
	guardImage    string
	clusterDomain string
	// graces are the health classifier's graces; zero fields keep its defaults.
	graces health.Graces
	// views are the EtcdCluster controller's observations of member endpoints; nil leaves
	// Unreachable and the lagging note out of Healthy.
	views *etcdview.Board
	// noNodeReads keeps the controller from reading Nodes and PersistentVolumes, which the
	// namespace-scoped install's Roles cannot grant (WithoutClusterScopedReads).
	noNodeReads bool
}

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithEtcdClients sets where etcd clients come from: an *etcdclient.Pool, or a test's fake.
// The controller sees its clients only through memberLister. Without it the controller keeps a
// private pool.
func WithEtcdClients(pool etcdclient.Clients[etcdclient.Client]) Option {
	return func(r *Reconciler) {
		if pool != nil {
			r.etcd = etcdclient.Narrow(pool, asMemberLister)
		}
	}
}

// WithClock sets the clock condition transition times are read from.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithImageRepository sets the etcd image repository (--etcd-image-repository); empty means
// desired.DefaultImageRepository.
func WithImageRepository(repo string) Option { return func(r *Reconciler) { r.imageRepository = repo } }

// WithEtcdViews reads the EtcdCluster controller's observations of member endpoints from
// board, and reconciles a member whenever its observation changes.
func WithEtcdViews(board *etcdview.Board) Option { return func(r *Reconciler) { r.views = board } }

// WithGuardImage sets the image whose /etcd-guard runs etcd in PVC members' Pods
// (--data-guard-image, by default the operator's own); empty runs them without the guard.
func WithGuardImage(image string) Option { return func(r *Reconciler) { r.guardImage = image } }

// WithClusterDomain sets the Kubernetes DNS domain (--cluster-domain). Nothing here reads it
// yet: member DNS names never carry it (docs/api.md, "Objects and their names"), and the checks
// of fully qualified names in member certificates that would need it are not built yet.
func WithClusterDomain(domain string) Option { return func(r *Reconciler) { r.clusterDomain = domain } }

// WithPendingGrace sets how long a member's Pod may stay unschedulable before the member is
// Healthy=False/Unschedulable (docs/design/healing.md, "Classification"); zero keeps
// health.DefaultPendingGrace.
func WithPendingGrace(d time.Duration) Option { return func(r *Reconciler) { r.graces.Pending = d } }

// WithGraces sets every grace of the health classification (docs/design/healing.md and
// docs/design/timings.md, "Graces"); zero fields keep the defaults. Options apply in order, so
// WithGraces after WithPendingGrace overrides the pending grace too.
func WithGraces(g health.Graces) Option { return func(r *Reconciler) { r.graces = g } }

// WithoutClusterScopedReads keeps the controller from reading Nodes and PersistentVolumes
// (--cluster-scoped-reads=false, the namespace-scoped install). A lost Node is then seen only
// through what its Pod says (taintEvictedNode); a Pending Pod whose volume is pinned to a lost
// Node is not recognised (docs/operator.md, "Namespace-scoped install").
func WithoutClusterScopedReads() Option { return func(r *Reconciler) { r.noNodeReads = true } }

// WithRecorder sets the Event recorder.
func WithRecorder(rec events.EventRecorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// WithClient replaces the manager's client (cached reads, direct writes), e.g. with one wrapped
// by controller-runtime's interceptor package to count writes in tests.
func WithClient(c client.Client) Option { return func(r *Reconciler) { r.client = c } }

// WithAPIReader replaces the uncached reader Secrets are read with.
func WithAPIReader(rd client.Reader) Option { return func(r *Reconciler) { r.apiReader = rd } }

// New builds a Reconciler that reads through c (normally the manager's cached client) and
// reads Secrets through apiReader, uncached and by name: the operator then needs only get on
// Secrets and keeps no cache of every Secret in the cluster (docs/design/member-controller.md,
// "Wiring").
func New(c client.Client, apiReader client.Reader, opts ...Option) *Reconciler {
	r := &Reconciler{client: c, apiReader: apiReader, clock: clock.RealClock{}}
	for _, o := range opts {
		o(r)
	}
	if r.etcd == nil {
		r.etcd = etcdclient.Narrow(etcdclient.NewPool(), asMemberLister)
	}
	if r.recorder == nil {
		r.recorder = discardRecorder{}
	}
	return r
}

// SetupWithManager builds a Reconciler from mgr (its client, its uncached API reader and an
// Event recorder named after the controller, unless options say otherwise) and registers it.
func SetupWithManager(mgr ctrl.Manager, opts ...Option) error {
	base := []Option{WithRecorder(mgr.GetEventRecorder(ControllerName))}
	return New(mgr.GetClient(), mgr.GetAPIReader(), append(base, opts...)...).SetupWithManager(mgr)
}

// SetupWithManager registers the controller's watches: the EtcdMember itself, the Pods it
// controls, PVCs mapped to their member by the component label, and the parent EtcdCluster
// mapped to its members (for the deletion release and the cluster ID the Pod's
// --initial-cluster-state depends on).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&etcdv1alpha2.EtcdMember{}).
		Owns(&corev1.Pod{}).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(pvcToMember)).
		Watches(&etcdv1alpha2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToMembers),
			builder.WithPredicates(clusterChangesThatMatter())).
		WithOptions(controller.Options{
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](errorBackoffBase, errorBackoffMax),
		})
	if r.views != nil {
		b = b.WatchesRawSource(source.Channel(r.views.Events(), &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// pvcToMember maps a member PVC to its EtcdMember, by the component label the PVC is created
// with. PVCs of other applications carry no such label, or not the managed-by value.
func pvcToMember(_ context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	member := l[etcdv1alpha2.LabelComponent]
	if member == "" || l[etcdv1alpha2.LabelManagedBy] != etcdv1alpha2.ManagedByOperator || l[etcdv1alpha2.LabelCluster] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: member}}}
}

// clusterToMembers maps an EtcdCluster to the EtcdMembers that name it.
func (r *Reconciler) clusterToMembers(ctx context.Context, obj client.Object) []reconcile.Request {
	var list etcdv1alpha2.EtcdMemberList
	if err := r.client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		logf.FromContext(ctx).Error(err, "Listing EtcdMembers of a changed EtcdCluster", "etcdCluster", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.ClusterName == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// clusterChangesThatMatter passes the EtcdCluster events a member acts on: creation, deletion,
// the start of a deletion, the cluster ID latching and a reclaim policy change (which the
// member's PVC gets at once, so that a deletion right after it finds the PVC as the policy says). The cluster's frequent status writes
// would otherwise wake every member for nothing.
func clusterChangesThatMatter() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*etcdv1alpha2.EtcdCluster)
			n, ok2 := e.ObjectNew.(*etcdv1alpha2.EtcdCluster)
			if !ok1 || !ok2 {
				return true
			}
			return o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() ||
				o.Status.ClusterID != n.Status.ClusterID ||
				o.Spec.Storage.ReclaimPolicy != n.Spec.Storage.ReclaimPolicy
		},
	}
}

// RBAC. Pods are created and deleted here and nowhere else; PVCs are created here and patched
// (metadata) here, deleted only by the EtcdCluster controller. Secrets are read by name,
// uncached, for CA digests and the etcd client's TLS material and credentials. Nodes are read
// from the cache, only for a Pod stuck terminating or a Pending Pod whose volume is pinned to
// a Node, to tell whether that Node is lost. PersistentVolumes are read uncached, by name, only
// for such a Pending Pod: the PV's node affinity names the Node.
//
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one EtcdMember's Pod and PVC in line with its spec and reports what it sees.
// Every pass runs the same steps:
//
//  1. Fetch the EtcdMember; NotFound means done. A member carrying adoption-in-progress is left
//     completely alone (etcd-migrate owns it).
//  2. Build the scope once: the parent EtcdCluster (present, deleting, gone or unreadable, checked
//     by UID), the Pod <member> and the PVC data-<member>, each with an ownership verdict.
//  3. Arm the deferred status write: whatever happens below, status (podName, podUID, pvcName,
//     replicas, selector, restartBaseline, conditions Ready, Updated, VersionDrifted, Healthy) is
//     computed from this pass's observations and patched once, only if it changed. Healthy is
//     health.Classify's verdict on the Pod, its etcd container's terminations and restarts since it
//     was first seen not Ready (status.restartBaseline), for a Pod stuck terminating, its Node, and
//     for a Pending Pod the Node its bound volume is pinned to; Healthy turning False (or changing
//     its reason while False) is announced with one MemberFailed Warning.
//  4. Deletion branch (step "delete"): if the member is being deleted, decide whether the
//     member-cleanup finalizer may go (parent gone or deleting; never joined; or absent from etcd's
//     MemberList) and release it, or hold it and say why. Nothing else runs.
//  5. Add the member-cleanup finalizer if it is missing ("finalizer").
//  6. Ensure the PVC ("pvc", PVC members only): create data-<member> when absent; refuse a foreign
//     one, but wait while it is an earlier member's of this name (re-adoption rewrites its
//     member-uid); keep its labels and additionalMetadata in place.
//  7. Ensure the Pod ("pod"): delete it gracefully when dormant, delete a Failed Pod of a PVC
//     member (it is recreated from its PVC next pass), delete a PVC member's Pod whose template
//     hash differs from the one the EtcdCluster controller authorised (a rolling-update restart,
//     decideRestart), otherwise create it when initialCluster is set (never for a Memory member
//     that lost its Pod, and never while the parent is unreadable); refuse a foreign Pod, wait for
//     an earlier member's of this name to be garbage-collected; keep role=voter and
//     additionalMetadata in place.
//  8. Requeue only for external state (etcd membership during a deletion, a missing Secret, a Pod
//     create the API server refused) and for the end of a running classifier grace (pending, start,
//     failure, node-lost, terminating), which no event marks, whichever comes sooner; a write
//     conflict or an AlreadyExists from a stale cache requeues quietly after step.ConflictRetry;
//     watches drive everything else.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	member := &etcdv1alpha2.EtcdMember{}
	if err := r.client.Get(ctx, req.NamespacedName, member); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if _, ok := member.Annotations[etcdv1alpha2.AnnotationAdoptionInProgress]; ok {
		return ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx).WithValues("etcdMember", member.Name, "etcdCluster", member.Spec.ClusterName)
	ctx = logf.IntoContext(ctx, log)

	sc, err := r.buildScope(ctx, member)
	if err != nil {
		return ctrl.Result{}, err
	}
	var out step.Result
	// Status is written on every path from here, errors included, and a running grace that
	// ends before the step's own interval brings the pass back sooner.
	defer func() {
		recheck, err := r.patchStatus(ctx, sc)
		res, retErr = step.Finish(out.Sooner(recheck), errors.Join(retErr, err))
	}()
	out, retErr = r.runSteps(ctx, sc)
	return ctrl.Result{}, retErr // the deferred status write makes the result
}

// runSteps runs the steps of the pass over sc in order, until one fails or ends the pass: the
// deletion branch alone for a member being deleted, otherwise the finalizer, the PVC and the
// Pod. The steps take the pass's scope; step.Run knows only the context, so each is bound to sc.
func (r *Reconciler) runSteps(ctx context.Context, sc *scope) (step.Result, error) {
	bind := func(name string, run func(context.Context, *scope) (step.Result, error)) step.Named {
		return step.Named{Name: name, Run: func(ctx context.Context) (step.Result, error) { return run(ctx, sc) }}
	}
	observe := func(name string, took time.Duration) { metrics.StepDuration(ControllerName, name, took) }
	if !sc.member.DeletionTimestamp.IsZero() {
		return step.Run(ctx, observe, bind("delete", r.reconcileDelete))
	}
	return step.Run(ctx, observe, bind("finalizer", r.ensureFinalizer), bind("pvc", r.ensurePVC), bind("pod", r.ensurePod))
}

// ensureFinalizer adds the member-cleanup finalizer when it is missing, with an optimistic lock,
// so that a concurrent change of the finalizer list is never overwritten.
func (r *Reconciler) ensureFinalizer(ctx context.Context, sc *scope) (step.Result, error) {
	if controllerutil.ContainsFinalizer(sc.member, etcdv1alpha2.FinalizerMemberCleanup) {
		return step.Continue, nil
	}
	base := sc.member.DeepCopy()
	controllerutil.AddFinalizer(sc.member, etcdv1alpha2.FinalizerMemberCleanup)
	if err := r.client.Patch(ctx, sc.member, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return step.Continue, fmt.Errorf("adding finalizer %s: %w", etcdv1alpha2.FinalizerMemberCleanup, err)
	}
	return step.Continue, nil
}

// images are the images this operator builds members of the given version from, as the
// template hash sees them.
func (r *Reconciler) images(version string) desired.Images {
	return desired.MemberImages(r.imageRepository, version, r.guardImage)
}

// event records an action on the member and, when the parent is known, on the cluster too
// (member-scoped Events appear on both: docs/design/conditions-and-events.md, "Events").
func (r *Reconciler) event(sc *scope, eventType, reason, action, note string, args ...any) {
	var related *etcdv1alpha2.EtcdCluster
	if sc.parent != nil {
		related = sc.parent
	}
	if related != nil {
		r.recorder.Eventf(sc.member, related, eventType, reason, action, note, args...)
		r.recorder.Eventf(related, sc.member, eventType, reason, action, note, args...)
		return
	}
	r.recorder.Eventf(sc.member, nil, eventType, reason, action, note, args...)
}

// discardRecorder drops Events; it stands in when no recorder is configured.
type discardRecorder struct{}

func (discardRecorder) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}
