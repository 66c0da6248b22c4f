package etcdcluster_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// The fake etcd reports one version whatever a member's template says, so these tests set up
// running versions that differ from spec.version, as they do while a roll is under way (the
// case the CRD's spec-to-spec transition rule cannot see, docs/api.md, "EtcdCluster rules", rule 14).

// TestVersionSkipRefused: members run 3.5.35 while the spec already says 3.6.16; a change to
// 3.7.3 passes the CRD (3.6 → 3.7) but skips 3.6 for the members that run. It is refused,
// with the condition and one Warning, and nothing is adopted or touched. Once the members run
// 3.6.16 the same spec is adopted: the check runs again every pass.
func TestVersionSkipRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.fakeRunning("skip", "3.5.35")
	w.fakeIndex("skip", 10) // where the members stand when they first run 3.6, below
	w.newClusterAt("skip", "3.6.16")
	wait.Eventually(t, convergeTimeout, "1 member", w.converged("skip", 1))
	before := w.cluster("skip")
	mutations := len(w.fake("skip").Mutations())

	w.setVersion("skip", "3.7.3")
	wait.Eventually(t, convergeTimeout, "skip refused", w.versionRefused("skip",
		"version 3.7.3 skips a minor: the cluster runs 3.5.35; upgrade to 3.6.x (the newest supported 3.6 is 3.6.16) first"))
	c := w.cluster("skip")
	if c.Status.Observed.Version != "3.6.16" || c.Status.ObservedGeneration != before.Status.ObservedGeneration {
		t.Errorf("observed version %s generation %d, want 3.6.16 and %d: the refused spec was adopted",
			c.Status.Observed.Version, c.Status.ObservedGeneration, before.Status.ObservedGeneration)
	}
	if c.Status.RunningVersion != "3.5.35" {
		t.Errorf("runningVersion = %q", c.Status.RunningVersion)
	}
	ms, err := w.members(t.Context(), "skip")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Spec.Version != "3.6.16" {
			t.Errorf("member %s template version %s, want 3.6.16", m.Name, m.Spec.Version)
		}
	}
	if got := w.fake("skip").Mutations(); len(got) != mutations {
		t.Errorf("etcd mutations after the refusal: %v", got[mutations:])
	}
	wait.Eventually(t, convergeTimeout, "one Warning", w.eventsOnce("skip", "VersionChangeRejected"))

	// The members reach 3.6.16 (what the roll will do): 3.7.3 no longer skips anything, but
	// a member may still replay entries 3.5 wrote until it snapshots under 3.6 (finding 9).
	w.fakeRunning("skip", "3.6.16")
	w.touch("skip")
	wait.Eventually(t, convergeTimeout, "3.7.3 waits for the snapshot", w.versionRefused("skip",
		"version 3.7.3 must wait until every member has taken a raft snapshot under 3.6, or a member may replay entries 3.5 wrote, which 3.7 cannot read: "+
			"every member must apply raft index 11011, 11001 entries beyond index 10 where every member first ran 3.6; "+
			"keep 3.6.16 until then (write to the cluster, or lower options.snapshotCount, to get there sooner)"))
	if ms := w.cluster("skip").Status.MinorSince; ms == nil || ms.Minor != "3.6" || ms.RaftIndex != 10 || ms.Snapshotted {
		t.Errorf("minorSince = %+v, want 3.6 from index 10, not snapshotted", ms)
	}
	// The member applies past the snapshot interval: 3.7.3 is adopted.
	w.fakeIndex("skip", 11_011)
	w.touch("skip")
	wait.Eventually(t, convergeTimeout, "3.7.3 adopted", w.versionAdopted("skip", "3.7.3"))
	if ms := w.cluster("skip").Status.MinorSince; ms == nil || !ms.Snapshotted {
		t.Errorf("minorSince = %+v, want snapshotted", ms)
	}
}

// TestNewClusterMayStepMinorAtOnce: a cluster the operator formed on 3.6 holds no entry 3.5
// wrote, so 3.7 is adopted without waiting for a snapshot.
func TestNewClusterMayStepMinorAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newClusterAt("fresh", "3.6.16")
	wait.Eventually(t, convergeTimeout, "1 member", w.converged("fresh", 1))
	if ms := w.cluster("fresh").Status.MinorSince; ms == nil || ms.Minor != "3.6" || ms.RaftIndex != 0 || !ms.Snapshotted {
		t.Errorf("minorSince = %+v, want 3.6 from the start, snapshotted", ms)
	}
	w.setVersion("fresh", "3.7.3")
	wait.Eventually(t, convergeTimeout, "3.7.3 adopted", w.versionAdopted("fresh", "3.7.3"))
}

// TestVersionDowngradeRefusedThenFixedSpecAdopted: members run 3.6.16 under a 3.5.35 spec; a
// patch change to 3.5.20 passes the CRD but goes below the running minor. It is refused; the
// corrected spec, 3.6.16, is adopted by the next pass.
func TestVersionDowngradeRefusedThenFixedSpecAdopted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.fakeRunning("down", "3.6.16")
	w.newClusterAt("down", "3.5.35")
	wait.Eventually(t, convergeTimeout, "1 member", w.converged("down", 1))

	w.setVersion("down", "3.5.20")
	wait.Eventually(t, convergeTimeout, "downgrade refused", w.versionRefused("down",
		"version 3.5.20 downgrades below the running minor 3.6: the cluster runs 3.6.16; "+
			"allowed: 3.6.x (the newest supported 3.6 is 3.6.16) or 3.7.x (the newest supported 3.7 is 3.7.3)"))
	if v := w.cluster("down").Status.Observed.Version; v != "3.5.35" {
		t.Errorf("observed version %s, want 3.5.35", v)
	}

	w.setVersion("down", "3.6.16")
	wait.Eventually(t, convergeTimeout, "3.6.16 adopted", w.versionAdopted("down", "3.6.16"))
	wait.Eventually(t, convergeTimeout, "one Warning", w.eventsOnce("down", "VersionChangeRejected"))
	// The adopted version is rolled to the running member (docs/design/rolling-updates.md): one member,
	// restarted in place on its PVC with the new template.
	wait.Eventually(t, convergeTimeout, "the member rolled to 3.6.16", func() error {
		ms, err := w.members(t.Context(), "down")
		if err != nil {
			return err
		}
		if len(ms) != 1 {
			return fmt.Errorf("%d members: %w", len(ms), errNotYet)
		}
		if v := ms[0].Spec.Version; v != "3.6.16" {
			return fmt.Errorf("member %s templated %s: %w", ms[0].Name, v, errNotYet)
		}
		return w.converged("down", 1)()
	})
}

// fakeRunning makes cluster name's fake etcd members report version v.
func (w *world) fakeRunning(name, v string) { w.fake(name).SetVersion(v) }

// fakeIndex makes cluster name's fake etcd members report raft index i, committed and applied.
func (w *world) fakeIndex(name string, i uint64) { w.fake(name).SetRaftIndex(i) }

// newClusterAt creates a one-member EtcdCluster at spec.version v.
func (w *world) newClusterAt(name, v string) {
	w.t.Helper()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To(int32(1)), Version: v,
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}},
	}
	if err := k8s.Create(w.t.Context(), c); err != nil {
		w.t.Fatalf("creating EtcdCluster %s: %v", name, err)
	}
}

// setVersion patches spec.version.
func (w *world) setVersion(name, v string) {
	w.t.Helper()
	c := w.cluster(name)
	before := c.DeepCopy()
	c.Spec.Version = v
	if err := k8s.Patch(w.t.Context(), c, client.MergeFrom(before)); err != nil {
		w.t.Fatalf("setting %s's version to %s: %v", name, v, err)
	}
}

// touch changes an annotation of the cluster so that it is reconciled now: the fake's version
// changing fires no watch.
func (w *world) touch(name string) {
	w.t.Helper()
	c := w.cluster(name)
	before := c.DeepCopy()
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, "test.etcd-operator.cozystack.io/touch", c.ResourceVersion)
	if err := k8s.Patch(w.t.Context(), c, client.MergeFrom(before)); err != nil {
		w.t.Fatalf("touching %s: %v", name, err)
	}
}

// versionRefused checks Progressing=False/VersionChangeRejected with message msg for the
// current generation, which is not adopted.
func (w *world) versionRefused(name, msg string) func() error {
	return func() error {
		c := &etcdv1alpha2.EtcdCluster{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, c); err != nil {
			return err
		}
		pr := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if pr == nil || pr.Status != metav1.ConditionFalse || pr.Reason != membership.ReasonVersionChangeRejected ||
			pr.Message != msg || pr.ObservedGeneration != c.Generation {
			return fmt.Errorf("Progressing = %+v at generation %d", pr, c.Generation)
		}
		if c.Status.ObservedGeneration == c.Generation {
			return fmt.Errorf("generation %d adopted", c.Generation)
		}
		return nil
	}
}

// versionAdopted checks that the current generation, at version v, is latched and no longer
// refused.
func (w *world) versionAdopted(name, v string) func() error {
	return func() error {
		c := &etcdv1alpha2.EtcdCluster{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, c); err != nil {
			return err
		}
		pr := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if c.Status.Observed == nil || c.Status.Observed.Version != v || c.Status.ObservedGeneration != c.Generation ||
			pr == nil || pr.Reason == membership.ReasonVersionChangeRejected {
			return fmt.Errorf("observed %+v generation %d/%d, Progressing %+v", c.Status.Observed, c.Status.ObservedGeneration, c.Generation, pr)
		}
		return nil
	}
}
