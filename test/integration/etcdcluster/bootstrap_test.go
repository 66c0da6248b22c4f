package etcdcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

func TestBootstrapOneMember(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newCluster("one", 1)
	wait.Eventually(t, convergeTimeout, "one member converged", w.converged("one", 1))

	c := w.cluster("one")
	ms, err := w.members(t.Context(), "one")
	if err != nil || len(ms) != 1 {
		t.Fatalf("members = %d (%v), want 1", len(ms), err)
	}
	m := ms[0]
	if !m.Spec.Bootstrap || !strings.HasPrefix(m.Name, "one-") {
		t.Errorf("seed %s: bootstrap=%v", m.Name, m.Spec.Bootstrap)
	}
	if want := m.Name + "=http://" + m.Name + ".one." + w.ns + ".svc:2380"; m.Spec.InitialCluster != want {
		t.Errorf("initialCluster = %q, want %q", m.Spec.InitialCluster, want)
	}
	if ref := metav1.GetControllerOf(&m); ref == nil || ref.UID != c.UID {
		t.Errorf("seed controller = %+v, want the cluster", ref)
	}
	etcd := w.fake("one").Members()
	if want := membership.SeedClusterID(etcd[0].ID); c.Status.ClusterID != want {
		t.Errorf("clusterID = %q, want %q", c.Status.ClusterID, want)
	}
	if want := membership.Token(w.ns, "one", string(c.UID)); c.Status.ClusterToken != want || m.Spec.ClusterToken != want {
		t.Errorf("tokens = %q / %q, want %q", c.Status.ClusterToken, m.Spec.ClusterToken, want)
	}
	if c.Status.Selector != etcdv1alpha2.LabelCluster+"=one" || c.Status.RunningVersion != etcdfake.Version {
		t.Errorf("selector %q runningVersion %q", c.Status.Selector, c.Status.RunningVersion)
	}
	for _, name := range []string{"one", "one-client"} {
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: name}, &corev1.Service{}); err != nil {
			t.Errorf("Service %s: %v", name, err)
		}
	}
	if n, err := w.pdbMinAvailable(t.Context(), "one"); err != nil || n != 1 {
		t.Errorf("PDB minAvailable = %d (%v), want 1", n, err)
	}
	if got := w.fake("one").Mutations(); len(got) != 0 {
		t.Errorf("a one-member bootstrap made etcd mutations: %v", got)
	}
	wait.Eventually(t, convergeTimeout, "bootstrap Events", w.eventsOnce("one", "SeedCreated", "ClusterBootstrapped"))

	// additionalMetadata reaches the Services and the member in place.
	before := c.DeepCopy()
	c.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "db"}}
	if err := k8s.Patch(t.Context(), c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "additionalMetadata applied in place", w.labelledInPlace("one", "team", "db"))
	wait.Eventually(t, convergeTimeout, "converged on the new generation", w.converged("one", 1))
}

// TestBootstrapThreeMembers checks the whole bootstrap of 3 and, while it runs, what status and
// the PDB say at every observation: Available never True before 2 voters are Ready, the PDB
// always protects the target's quorum once a voter exists, and one seed only.
func TestBootstrapThreeMembers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newCluster("three", 3)

	obs := &bootstrapObserver{t: t, w: w, name: "three"}
	wait.Eventually(t, convergeTimeout, "three members converged", obs.check)
	if !obs.sawBelowTarget || !obs.sawPDB {
		t.Logf("observed BelowTargetQuorum=%v, PDB during bootstrap=%v (timing-dependent)", obs.sawBelowTarget, obs.sawPDB)
	}
	f := w.fake("three")
	if n := f.MostLearners(); n > 1 {
		t.Errorf("etcd listed %d learners at once", n)
	}
	adds, promotes := f.Count(etcdfake.MemberAddAsLearner), f.Count(etcdfake.MemberPromote)
	if adds != 2 {
		t.Errorf("learner adds = %d, want 2: %v", adds, f.Mutations())
	}
	if promotes < 2 {
		t.Errorf("promotions = %d, want at least 2", promotes)
	}
	ms, _ := w.members(t.Context(), "three")
	for _, m := range ms {
		if !m.Spec.Bootstrap && strings.Count(m.Spec.InitialCluster, ",") < 1 {
			t.Errorf("member %s joined with initialCluster %q", m.Name, m.Spec.InitialCluster)
		}
		if m.Labels[etcdv1alpha2.LabelComponent] != m.Name {
			t.Errorf("member %s lacks its component label: %v", m.Name, m.Labels)
		}
	}
	if n, _ := w.pdbMinAvailable(t.Context(), "three"); n != 2 {
		t.Errorf("PDB minAvailable = %d, want 2", n)
	}
}

// bootstrapObserver checks, at every observation of a bootstrap of 3, what status and the PDB
// say: one seed at most, Available never True before 2 members are Ready, the PDB protecting the
// target's quorum (2) as soon as it exists.
type bootstrapObserver struct {
	t                      *testing.T
	w                      *world
	name                   string
	sawBelowTarget, sawPDB bool
}

func (o *bootstrapObserver) check() error {
	ctx := context.Background()
	c := o.w.cluster(o.name)
	ms, err := o.w.members(ctx, o.name)
	if err != nil {
		return err
	}
	seeds := 0
	for _, m := range ms {
		if m.Spec.Bootstrap {
			seeds++
		}
	}
	if seeds > 1 {
		o.t.Fatalf("%d seeds created", seeds)
	}
	av := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionAvailable)
	if av != nil && av.Status == metav1.ConditionTrue && c.Status.ReadyMembers < 2 {
		o.t.Fatalf("Available=True with %d Ready members", c.Status.ReadyMembers)
	}
	if av != nil && av.Reason == membership.ReasonBelowTargetQuorum {
		o.sawBelowTarget = true
	}
	n, err := o.w.pdbMinAvailable(ctx, o.name)
	if err != nil {
		return err
	}
	if n != -1 {
		o.sawPDB = true
		if n != 2 {
			o.t.Fatalf("PDB minAvailable = %d during a bootstrap of 3, want 2", n)
		}
	}
	return o.w.converged(o.name, 3)()
}

// eventsOnce checks that exactly one Event of each reason regards cluster.
func (w *world) eventsOnce(cluster string, reasons ...string) func() error {
	return func() error {
		var evs eventsv1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(w.ns)); err != nil {
			return err
		}
		seen := map[string]int{}
		for _, e := range evs.Items {
			if e.Regarding.Name == cluster {
				seen[e.Reason]++
			}
		}
		for _, r := range reasons {
			if seen[r] != 1 {
				return fmt.Errorf("events by reason: %v", seen)
			}
		}
		return nil
	}
}

// labelledInPlace checks that the client Service and the cluster's only member carry the
// additionalMetadata label key=value.
func (w *world) labelledInPlace(cluster, key, value string) func() error {
	return func() error {
		svc := &corev1.Service{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: cluster + "-client"}, svc); err != nil {
			return err
		}
		ms, err := w.members(context.Background(), cluster)
		if err != nil || len(ms) != 1 {
			return fmt.Errorf("members: %d, %w", len(ms), errors.Join(err, errNotYet))
		}
		if svc.Labels[key] != value || ms[0].Spec.AdditionalMetadata == nil || ms[0].Spec.AdditionalMetadata.Labels[key] != value {
			return fmt.Errorf("service labels %v, member metadata %+v", svc.Labels, ms[0].Spec.AdditionalMetadata)
		}
		return nil
	}
}
