package etcdcluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

// Test timings. Waits poll; nothing sleeps for a fixed time to let something happen.
const (
	convergeTimeout = 60 * time.Second
	pollInterval    = 100 * time.Millisecond
	kubeletTick     = 100 * time.Millisecond
	// fakeSettles stand in for etcd's 5 s strict reconfiguration check, which the fake does
	// not enforce, and for the roll's 10 s RollSettle, which the fake kubelet's Pods, Ready
	// the moment they run, gain nothing from: the planner still waits for them, only shorter.
	// Worlds of real etcd processes keep the production settles.
	fakeStrictReconfigSettle = 500 * time.Millisecond
	fakeRollSettle           = time.Second
)

// settles returns the controller option that shortens the settle times in a fake world.
func (w *world) settles() []etcdcluster.Option {
	if w.real != nil {
		return nil
	}
	return []etcdcluster.Option{etcdcluster.WithSettles(fakeStrictReconfigSettle, fakeRollSettle)}
}

// controllerOptions are the world's options for every Reconciler it runs: the settles, and the
// guard image when the world stages its members.
func (w *world) controllerOptions() []etcdcluster.Option {
	opts := w.settles()
	if w.guardImage != "" {
		opts = append(opts, etcdcluster.WithGuardImage(w.guardImage))
	}
	return opts
}

func noJitter(d time.Duration) time.Duration { return d }

// world is one test's namespace: the fake etcd clusters and the fake kubelet that runs them.
type world struct {
	t    *testing.T
	ns   string
	pool *etcdclient.Pool

	mu      sync.Mutex
	fakes   map[string]*etcdfake.Cluster
	unready map[string]bool // member Pods the kubelet reports not Ready
	// kubeletOnly leaves Pods, PVCs and member status to the real EtcdMember controller: the
	// fake then only runs the Pods it creates and their etcd processes.
	kubeletOnly bool
	// memberOpts configure the real EtcdMember controller (kubeletOnly).
	memberOpts []etcdmember.Option
	// nodeLabels are the labels of the one node the fake kubelet schedules onto (kubeletOnly):
	// a Pod whose nodeSelector they do not satisfy stays Pending, unschedulable.
	nodeLabels map[string]string
	// real runs real etcd processes for the Pods instead of the fakes (newRealWorld).
	real *realEtcd
	// guardImage, when set, is given to the controller (WithGuardImage): new members are then
	// staged, their Pods running before their add (docs/design/membership-flows.md).
	guardImage string
	// held are the members whose Pods ran while etcd did not list them.
	held map[string]bool
	// forced are the Pods whose etcd the fake guard restarted with --force-new-cluster;
	// clusterIDs are the cluster IDs the fake guards report, by cluster name.
	forced     map[types.UID]bool
	clusterIDs map[string]string
}

// etcdMembers is etcd's member list of cluster name: the fake's, or the real processes'.
func (w *world) etcdMembers(name string) []etcdclient.Member {
	if w.real != nil {
		return w.real.snapshot()
	}
	return w.fake(name).Members()
}

// newWorld creates a namespace and starts the fake kubelet in it.
func newWorld(t *testing.T) *world {
	t.Helper()
	ns := apiserver.NewNamespace(t, k8s, "etcdcluster-")
	w := &world{t: t, ns: ns, pool: etcdclient.NewPool(etcdclient.WithDialer(net0.dial)), fakes: map[string]*etcdfake.Cluster{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := w.tick(ctx); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				t.Logf("fake kubelet: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(kubeletTick):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; _ = w.pool.Close() })
	return w
}

// fake returns the etcd fake of cluster name: a cluster with no member until its seed's
// process forms it.
func (w *world) fake(name string) *etcdfake.Cluster {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.fakes[name]
	if f == nil {
		f = etcdfake.NewCluster(0)
		w.fakes[name] = f
	}
	return f
}

// startController runs the real controller in a manager whose cache sees this namespace only.
func (w *world) startController(opts ...etcdcluster.Option) {
	t := w.t
	t.Helper()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{w.ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating a manager: %v", err)
	}
	opts = append(append([]etcdcluster.Option{etcdcluster.WithResyncJitter(noJitter)}, w.controllerOptions()...), opts...)
	if err := etcdcluster.NewFromManager(mgr, w.pool, opts...).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if w.kubeletOnly {
		if err := etcdmember.SetupWithManager(mgr, append([]etcdmember.Option{etcdmember.WithEtcdClients(w.pool)}, w.memberOpts...)...); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// newCluster creates an EtcdCluster with replicas members.
func (w *world) newCluster(name string, replicas int32) *etcdv1alpha2.EtcdCluster {
	w.t.Helper()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}},
	}
	if err := k8s.Create(w.t.Context(), c); err != nil {
		w.t.Fatalf("creating EtcdCluster %s: %v", name, err)
	}
	return c
}

// setReplicas patches spec.replicas.
func (w *world) setReplicas(name string, replicas int32) {
	w.t.Helper()
	c := w.cluster(name)
	before := c.DeepCopy()
	c.Spec.Replicas = ptr.To(replicas)
	if err := k8s.Patch(w.t.Context(), c, client.MergeFrom(before)); err != nil {
		w.t.Fatalf("scaling %s to %d: %v", name, replicas, err)
	}
}

func (w *world) cluster(name string) *etcdv1alpha2.EtcdCluster {
	w.t.Helper()
	c := &etcdv1alpha2.EtcdCluster{}
	if err := k8s.Get(w.t.Context(), client.ObjectKey{Namespace: w.ns, Name: name}, c); err != nil {
		w.t.Fatalf("reading EtcdCluster %s: %v", name, err)
	}
	return c
}

func (w *world) members(ctx context.Context, cluster string) ([]etcdv1alpha2.EtcdMember, error) {
	var list etcdv1alpha2.EtcdMemberList
	if err := k8s.List(ctx, &list, client.InNamespace(w.ns), client.MatchingLabels{etcdv1alpha2.LabelCluster: cluster}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// converged checks the end state of a cluster of n members: n voters in etcd, each an
// EtcdMember with status.memberID, no learner, no pending member, Available=True and
// Progressing=False/Reconciled for the current generation.
func (w *world) converged(name string, n int) func() error {
	return func() error {
		c := &etcdv1alpha2.EtcdCluster{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, c); err != nil {
			return err
		}
		if err := consistent(w, c); err != nil {
			return err
		}
		ms := w.etcdMembers(name)
		if len(ms) != n {
			return fmt.Errorf("etcd lists %d members, want %d", len(ms), n)
		}
		av := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionAvailable)
		pr := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if av == nil || av.Status != metav1.ConditionTrue || pr == nil || pr.Reason != membership.ReasonReconciled ||
			c.Status.ObservedGeneration != c.Generation || pr.ObservedGeneration != c.Generation {
			return fmt.Errorf("conditions %+v, generation %d observed %d", c.Status.Conditions, c.Generation, c.Status.ObservedGeneration)
		}
		if c.Status.ReadyMembers != int32(n) || c.Status.UpdatedMembers != int32(n) {
			return fmt.Errorf("readyMembers %d, updatedMembers %d, want %d", c.Status.ReadyMembers, c.Status.UpdatedMembers, n)
		}
		return nil
	}
}

// consistent checks the crash-consistency invariants between EtcdMembers and etcd: every etcd
// member has an EtcdMember (no orphan), every non-dormant EtcdMember is in etcd, started and a
// voter (no unstarted member, no leftover learner), nothing is pending, no two EtcdMembers share
// an etcd member (no duplicate), and member status carries the right ID.
func consistent(w *world, c *etcdv1alpha2.EtcdCluster) error {
	ms, err := w.members(context.Background(), c.Name)
	if err != nil {
		return err
	}
	etcd := w.etcdMembers(c.Name)
	seen := map[uint64]string{}
	for _, m := range ms {
		if !m.DeletionTimestamp.IsZero() || m.Annotations[etcdv1alpha2.AnnotationRemovalReason] != "" {
			return fmt.Errorf("member %s is being removed", m.Name)
		}
		if m.Spec.InitialCluster == "" {
			return fmt.Errorf("member %s is pending", m.Name)
		}
		if m.Spec.Dormant {
			continue
		}
		peer := desired.PeerURL(&m)
		i := slices.IndexFunc(etcd, func(e etcdclient.Member) bool { return slices.Contains(e.PeerURLs, peer) })
		if i < 0 {
			return fmt.Errorf("member %s is not in etcd", m.Name)
		}
		e := etcd[i]
		if e.IsLearner || !e.Started() {
			return fmt.Errorf("member %s is a learner or not started in etcd", m.Name)
		}
		if other, dup := seen[e.ID]; dup {
			return fmt.Errorf("members %s and %s are both etcd member %s", other, m.Name, e.IDHex())
		}
		seen[e.ID] = m.Name
		if m.Status.MemberID != e.IDHex() || !m.Status.IsVoter {
			return fmt.Errorf("member %s has status memberID %q isVoter %v, etcd says %s", m.Name, m.Status.MemberID, m.Status.IsVoter, e.IDHex())
		}
	}
	for _, e := range etcd {
		if _, ok := seen[e.ID]; !ok && !slices.ContainsFunc(ms, func(m etcdv1alpha2.EtcdMember) bool { return m.Spec.Dormant }) {
			return fmt.Errorf("etcd member %s (%s) has no EtcdMember", e.IDHex(), e.Name)
		}
	}
	return nil
}

// pdbMinAvailable returns the PDB's minAvailable, or -1 when there is none.
func (w *world) pdbMinAvailable(ctx context.Context, name string) (int, error) {
	pdb := &policyv1.PodDisruptionBudget{}
	err := k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, pdb)
	if apierrors.IsNotFound(err) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	return pdb.Spec.MinAvailable.IntValue(), nil
}

var errNotYet = errors.New("not yet")
