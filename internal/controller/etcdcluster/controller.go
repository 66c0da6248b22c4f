package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	"github.com/etcd-operator/etcd-operator/internal/guard"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/pki"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// ControllerName names the controller in logs, metrics and Events.
const ControllerName = "etcdcluster"

// Requeue intervals (docs/design/timings.md). Watches drive most passes; these cover external
// state.
const (
	// healthResync is how often an idle cluster is looked at again, to notice etcd-side changes
	// no watch reports. The work queue adds no jitter, so the controller does (±10 %).
	healthResync = 30 * time.Second
	// nextStepDelay is how soon the pass after a successful step runs: one step per pass, without
	// waiting for a watch that an etcd-only change would never fire.
	nextStepDelay = 50 * time.Millisecond
	// errorBackoffBase and errorBackoffMax bound the back-off after a failed pass: the library's
	// default cap of about 16 minutes is too slow for a cluster that lost a member.
	errorBackoffBase = 5 * time.Millisecond
	errorBackoffMax  = 5 * time.Minute
)

// etcdAPI lists the etcd calls this controller makes: membership, leadership, health, keyspace
// hashes and alarms. The EtcdCluster controller is the only one whose interface has membership calls.
type etcdAPI interface {
	MemberList(ctx context.Context) ([]etcdclient.Member, error)
	LocalMemberList(ctx context.Context, endpoint string) ([]etcdclient.Member, error)
	MemberAddAsLearner(ctx context.Context, peerURLs []string) (etcdclient.Member, []etcdclient.Member, error)
	MemberPromote(ctx context.Context, id uint64) ([]etcdclient.Member, error)
	MemberRemove(ctx context.Context, id uint64) ([]etcdclient.Member, error)
	MoveLeader(ctx context.Context, to uint64) error
	Status(ctx context.Context, endpoint string) (etcdclient.Status, error)
	HashKV(ctx context.Context, endpoint string, rev int64) (etcdclient.HashKV, error)
	AlarmList(ctx context.Context) ([]etcdclient.Alarm, error)
	AlarmDisarm(ctx context.Context, alarm etcdclient.Alarm) ([]etcdclient.Alarm, error)
	AuthEnabled(ctx context.Context) (bool, error)
	EnableRootAuth(ctx context.Context, password string) error
	ChangeRootPassword(ctx context.Context, password string) error
}

// asEtcdAPI narrows a pooled client to the calls this controller makes.
func asEtcdAPI(c etcdclient.Client) etcdAPI { return c }

// Reconciler reconciles EtcdClusters. Build it with New.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	etcd      etcdclient.Clients[etcdAPI]
	clock     clock.PassiveClock
	memory    *memory
	// orphanGrace overrides membership.DefaultOrphanMemberGrace.
	orphanGrace time.Duration
	// settles overrides membership.StrictReconfigSettle and membership.RollSettle.
	settles settles
	// certManager answers whether cert-manager's API is served, for clusters whose spec.tls
	// asks cert-manager for certificates.
	certManager CertManagerProbe
	// jitter returns the resync interval; tests pin it.
	jitter func(time.Duration) time.Duration
	// hashes remembers each cluster's keyspace hash comparisons (observe_hash.go).
	hashes *hashChecks
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
	// noStorageClassReads keeps the controller from reading StorageClasses, which the
	// namespace-scoped install's Roles cannot grant (WithoutClusterScopedReads).
	noStorageClassReads bool
	// logTail reads a member's log tail from its guard while quorum is lost
	// (docs/design/quorum-recovery.md).
	logTail logTailReader
	// clusterDomain is the Kubernetes DNS domain the managed certificates name (docs/tls.md).
	clusterDomain string
	// tlsCache remembers each cluster's parsed TLS Secrets and announced expiries (tlscache.go).
	tlsCache *tlsCache
	// caRotationDwell overrides pki.CARotationDwell.
	caRotationDwell time.Duration
}

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithClock replaces the wall clock (tests use a fake one).
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithOrphanMemberGrace replaces membership.DefaultOrphanMemberGrace.
func WithOrphanMemberGrace(d time.Duration) Option { return func(r *Reconciler) { r.orphanGrace = d } }

// WithSettles replaces membership.StrictReconfigSettle and membership.RollSettle (a zero keeps
// the constant). Tests whose etcd is a fake, which does not enforce etcd's 5 s, and whose Pods
// turn Ready at once, use shorter ones; production never sets them.
func WithSettles(strictReconfig, roll time.Duration) Option {
	return func(r *Reconciler) { r.settles = settles{strictReconfig: strictReconfig, roll: roll} }
}

// settles are the settle times WithSettles overrides.
type settles struct{ strictReconfig, roll time.Duration }

// WithLogTailReader replaces the HTTP read of a member's log tail from its guard: integration
// tests run the operator on the host, beside real etcd processes that run under no guard.
func WithLogTailReader(read func(ctx context.Context, podIP string) (guard.LogTailAnswer, error)) Option {
	return func(r *Reconciler) { r.logTail = read }
}

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

// WithoutClusterScopedReads keeps the controller from reading StorageClasses
// (--cluster-scoped-reads=false, the namespace-scoped install): a PVC smaller than
// spec.storage.size is then reported StorageExpansionUnsupported with how to grow it by hand
// (docs/design/storage.md).
func WithoutClusterScopedReads() Option { return func(r *Reconciler) { r.noStorageClassReads = true } }

// WithClusterDomain sets the Kubernetes DNS domain (--cluster-domain) that the certificates of
// spec.tls.managed name besides the short Service names; empty keeps cluster.local.
func WithClusterDomain(domain string) Option {
	return func(r *Reconciler) {
		if domain != "" {
			r.clusterDomain = domain
		}
	}
}

// WithCARotationDwell replaces pki.CARotationDwell, how long the old CA of a rotation stays
// trusted after the last leaf was re-issued (tests; production keeps the constant, which waits
// for the kubelet's refresh of mounted Secrets).
func WithCARotationDwell(d time.Duration) Option {
	return func(r *Reconciler) { r.caRotationDwell = d }
}

// WithResyncJitter replaces the ±10 % jitter applied to the idle resync interval.
func WithResyncJitter(f func(time.Duration) time.Duration) Option {
	return func(r *Reconciler) { r.jitter = f }
}

// New returns a Reconciler. c is the manager's (cached) client, apiReader an uncached reader used
// before every GenerateName create, pool the etcd client pool (seen only through the calls this
// controller makes), recorder the Event recorder.
func New(c client.Client, apiReader client.Reader, recorder events.EventRecorder, pool etcdclient.Clients[etcdclient.Client], opts ...Option) *Reconciler {
	r := &Reconciler{
		client: c, apiReader: apiReader, recorder: recorder,
		clock:    clock.RealClock{},
		jitter:   defaultJitter,
		memory:   newMemory(),
		hashes:   newHashChecks(),
		logTail:  httpLogTail,
		tlsCache: newTLSCache(), clusterDomain: defaultClusterDomain, caRotationDwell: pki.CARotationDwell,
	}
	if pool != nil {
		r.etcd = etcdclient.Narrow(pool, asEtcdAPI)
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// NewFromManager returns a Reconciler wired to mgr's clients and recorder, with a cert-manager
// probe that asks mgr's API server through discovery (options may replace it).
func NewFromManager(mgr ctrl.Manager, pool etcdclient.Clients[etcdclient.Client], opts ...Option) *Reconciler {
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
		// A Running EtcdDefrag holds the cluster's steps (docs/defrag.md); its end starts them.
		Watches(&etcdv1alpha2.EtcdDefrag{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			d, ok := o.(*etcdv1alpha2.EtcdDefrag)
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.ClusterRef.Name}}}
		})).
		// A snapshot that completes updates status.lastSnapshot (docs/backup-restore.md).
		Watches(&etcdv1alpha2.EtcdSnapshot{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			s, ok := o.(*etcdv1alpha2.EtcdSnapshot)
			if !ok || s.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name}}}
		})).
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

// EtcdMembers, PVCs, Services and the PDB carry an ownerReference to their EtcdCluster with
// blockOwnerDeletion, which an API server enforcing owner-reference permissions
// (OwnerReferencesPermissionEnforcement) admits only from a user who may update the owner's
// finalizers: hence etcdclusters/finalizers update, and no other right on that subresource.
//
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefrags,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete

// Reconcile runs one pass over one EtcdCluster (docs/design/reconcile-pass.md):
//
//  1. Fetch the cluster; NotFound or being deleted → forget its etcd client, memory and metrics,
//     and stop (no cluster finalizer: garbage collection removes members, Services, PDB and,
//     under reclaimPolicy Delete, PVCs). Annotation adoption-in-progress → stop without a write.
//  2. Observe, once: EtcdMembers, Pods, PVCs, StorageClasses (only while a PVC is smaller than
//     the latched size), the TLS material spec.tls asks for that is missing or invalid (and,
//     under spec.tls.managed, which Secrets to issue or renew and which step of a CA rotation or
//     of a move to managed TLS to take; with cert-manager, which of its
//     Certificates do not exist), and etcd's view
//     (MemberList, Status of every member endpoint, alarms, leader), and, when due, the voters'
//     keyspace hashes (observe_hash.go). A failed read ends the
//     pass with its error and no status write: nothing honest could be written.
//  3. Plan, in pure code (membership.PlanPass over the observation's scope): the lock's
//     decision on the target (including the version rules), the writes that disrupt nothing
//     (member status fields, in-place template fields, storage growth) and the one step.
//  4. Execute, in order, each step able to end the pass: the headless and client Services;
//     the missing cert-manager Certificates; the Warnings the plan calls for; an adoption ends
//     the pass here (requeue after nextStepDelay), so that it is written before anything acts
//     on it; the member status fields; the in-place template fields; the PVC requests and
//     recorded sizes; the certificates (Warnings of expiring ones; managed Secrets issued,
//     after which the pass ends); the step.
//  5. Always, once anything was observed: render status and conditions from the plan, apply
//     the PDB, patch status once if it changed, record metrics.
//  6. Requeue: what the executed step asked for; after a write conflict, quietly after
//     step.ConflictRetry; otherwise the jittered resync; never later than the next renewal
//     of a managed certificate.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
		logf.FromContext(ctx).V(1).Info("Skipping a cluster under adoption")
		return ctrl.Result{}, nil
	}

	start := time.Now()
	obs, err := r.observe(ctx, cluster)
	metrics.StepDuration(ControllerName, "observe", time.Since(start))
	if err != nil {
		return step.Finish(step.Continue, err)
	}
	start = time.Now()
	plan := planPass(obs)
	r.memory.sawHealthy(req.NamespacedName, &plan.After)
	x := r.executor(obs, plan)
	metrics.StepDuration(ControllerName, "plan", time.Since(start))
	res, err := step.Run(ctx, func(name string, took time.Duration) { metrics.StepDuration(ControllerName, name, took) },
		step.Named{Name: "services", Run: x.ensureServices},
		step.Named{Name: "certManager", Run: x.ensureCertManagerCertificates},
		step.Named{Name: "announce", Run: x.announce},
		step.Named{Name: "adopt", Run: x.stopAfterAdoption},
		step.Named{Name: "memberStatus", Run: x.syncMemberStatus},
		step.Named{Name: "inPlace", Run: x.syncInPlaceTemplate},
		step.Named{Name: "storage", Run: x.growStorage},
		step.Named{Name: "certificates", Run: x.syncCertificates},
		step.Named{Name: "action", Run: x.act},
	)
	start = time.Now()
	err = errors.Join(err, x.finish(ctx))
	metrics.StepDuration(ControllerName, "status", time.Since(start))
	out, err := step.Finish(res, err)
	if err == nil {
		if out.RequeueAfter == 0 {
			out.RequeueAfter = r.jitter(healthResync)
		}
		out.RequeueAfter = renewalRequeue(out.RequeueAfter, obs.certs.managed, obs.now)
	}
	return out, err
}

// forget drops everything held for a deleted cluster: its etcd client, memory and metrics.
func (r *Reconciler) forget(key types.NamespacedName) {
	if r.etcd != nil {
		_ = r.etcd.Forget(key.String()) // closing an idle client cannot fail in a way worth retrying
	}
	r.memory.forget(key)
	r.hashes.forget(key)
	r.tlsCache.forget(key)
	if r.views != nil {
		r.views.Forget(key)
	}
	metrics.ForgetCluster(key.String())
	metrics.ForgetSnapshots(key.Namespace, key.Name)
	metrics.ForgetClusterState(key.Namespace, key.Name)
}

// defaultJitter spreads idle resyncs by ±10 % so that a fleet's clusters do not resync together.
func defaultJitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d)) //nolint:gosec // G404: jitter, not security
}
