package etcdcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

func TestScaleThreeFiveThree(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newCluster("s", 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("s", 3))
	clusterID := w.cluster("s").Status.ClusterID

	// Scale through the /scale subresource, as kubectl scale and autoscalers do.
	scale := &autoscalingv1.Scale{}
	if err := k8s.SubResource("scale").Get(t.Context(), w.cluster("s"), scale); err != nil {
		t.Fatalf("reading /scale: %v", err)
	}
	if scale.Status.Replicas != 3 || scale.Status.Selector != etcdv1alpha2.LabelCluster+"=s" {
		t.Errorf("/scale status = %+v", scale.Status)
	}
	scale.Spec.Replicas = 5
	if err := k8s.SubResource("scale").Update(t.Context(), w.cluster("s"), client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scaling through /scale: %v", err)
	}
	wait.Eventually(t, convergeTimeout, "5 members", w.converged("s", 5))
	if n, _ := w.pdbMinAvailable(t.Context(), "s"); n != 3 {
		t.Errorf("PDB minAvailable at 5 = %d, want 3", n)
	}
	five, _ := w.members(t.Context(), "s")

	w.setReplicas("s", 3)
	wait.Eventually(t, convergeTimeout, "3 members again", w.converged("s", 3))
	wait.Eventually(t, convergeTimeout, "PVCs of removed members deleted", w.livePVCs(3))
	if n, _ := w.pdbMinAvailable(t.Context(), "s"); n != 2 {
		t.Errorf("PDB minAvailable at 3 = %d, want 2", n)
	}
	if got := w.cluster("s").Status.ClusterID; got != clusterID {
		t.Errorf("clusterID changed from %s to %s", clusterID, got)
	}
	// The two removed members were the newest two (all equal otherwise): the seed stays.
	three, _ := w.members(t.Context(), "s")
	for _, m := range three {
		if !containsMember(five, m.Name) {
			t.Errorf("member %s appeared during a scale-down", m.Name)
		}
	}
	if n := w.fake("s").MostLearners(); n > 1 {
		t.Errorf("etcd listed %d learners at once", n)
	}
	if removes := w.fake("s").Count(etcdfake.MemberRemove); removes != 2 {
		t.Errorf("MemberRemove calls = %d, want 2: %v", removes, w.fake("s").Mutations())
	}
}

// livePVCs checks that n PVCs of the namespace are not being deleted (envtest runs no
// PVC-protection controller: deleted PVCs stay Terminating).
func (w *world) livePVCs(n int) func(context.Context) error {
	return func(ctx context.Context) error {
		var pvcs corev1.PersistentVolumeClaimList
		if err := k8s.List(ctx, &pvcs, client.InNamespace(w.ns)); err != nil {
			return err
		}
		live := 0
		for _, p := range pvcs.Items {
			if p.DeletionTimestamp.IsZero() {
				live++
			}
		}
		if live != n {
			return fmt.Errorf("%d PVCs not being deleted, want %d", live, n)
		}
		return nil
	}
}

// TestScaleDownRemovesTheMemberAnnotatedRemoveFirst annotates the oldest member (the seed,
// which ranking by age would keep) with remove-first and an empty value, as "kubectl annotate
// ... remove-first=" writes it, and scales 3 → 2: the annotated member is the one removed.
func TestScaleDownRemovesTheMemberAnnotatedRemoveFirst(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newCluster("rf", 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("rf", 3))
	ms, err := w.members(t.Context(), "rf")
	if err != nil {
		t.Fatal(err)
	}
	var seed etcdv1alpha2.EtcdMember
	for _, m := range ms {
		if m.Spec.Bootstrap {
			seed = m
		}
	}
	if seed.Name == "" {
		t.Fatalf("no seed among %d members", len(ms))
	}
	before := seed.DeepCopy()
	seed.Annotations = map[string]string{etcdv1alpha2.AnnotationRemoveFirst: ""}
	if err := k8s.Patch(t.Context(), &seed, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}

	w.setReplicas("rf", 2)
	wait.Eventually(t, convergeTimeout, "2 members", w.converged("rf", 2))
	two, err := w.members(t.Context(), "rf")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range two {
		if m.Name == seed.Name {
			t.Errorf("member %s, annotated remove-first, is still there; kept %s and %s", seed.Name, two[0].Name, two[1].Name)
		}
	}
}

func containsMember(ms []etcdv1alpha2.EtcdMember, name string) bool {
	for _, m := range ms {
		if m.Name == name {
			return true
		}
	}
	return false
}

// TestPauseResume scales 3 → 0 → 3: the last member goes dormant with its PVC and etcd identity,
// the PDB goes away, and resuming wakes the same member in the same etcd cluster.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newCluster("p", 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("p", 3))
	clusterID := w.cluster("p").Status.ClusterID

	w.setReplicas("p", 0)
	var dormant string
	wait.Eventually(t, convergeTimeout, "paused", func() error {
		c := w.cluster("p")
		ms, err := w.members(context.Background(), "p")
		if err != nil {
			return err
		}
		if len(ms) != 1 || !ms[0].Spec.Dormant {
			return fmt.Errorf("%d members, want one dormant", len(ms))
		}
		dormant = ms[0].Name
		for _, typ := range []string{etcdv1alpha2.ConditionAvailable, etcdv1alpha2.ConditionProgressing, etcdv1alpha2.ConditionDegraded} {
			cond := meta.FindStatusCondition(c.Status.Conditions, typ)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != membership.ReasonPaused {
				return fmt.Errorf("%s = %+v, want False/Paused", typ, cond)
			}
		}
		if c.Status.ProgressDeadline != nil {
			return errors.New("deadline still armed")
		}
		if n, err := w.pdbMinAvailable(context.Background(), "p"); err != nil || n != -1 {
			return fmt.Errorf("PDB minAvailable %d, want deleted: %w", n, errors.Join(err, errNotYet))
		}
		return nil
	})
	av := meta.FindStatusCondition(w.cluster("p").Status.Conditions, etcdv1alpha2.ConditionAvailable)
	if !strings.Contains(av.Message, desired.PVCName(dormant)) {
		t.Errorf("Paused message %q does not name PVC %s", av.Message, desired.PVCName(dormant))
	}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: desired.PVCName(dormant)}, &corev1.PersistentVolumeClaim{}); err != nil {
		t.Errorf("dormant member's PVC: %v", err)
	}
	wait.Eventually(t, convergeTimeout, "dormant member's Pod gone", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: dormant}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("dormant member's Pod: %w", errors.Join(err, errNotYet))
		}
		return nil
	})

	w.setReplicas("p", 3)
	wait.Eventually(t, convergeTimeout, "resumed to 3", w.converged("p", 3))
	c := w.cluster("p")
	if c.Status.ClusterID != clusterID {
		t.Errorf("clusterID changed from %s to %s on resume", clusterID, c.Status.ClusterID)
	}
	ms, _ := w.members(t.Context(), "p")
	if !containsMember(ms, dormant) {
		t.Errorf("the dormant member %s was not the one woken", dormant)
	}
}

// TestQuorumGateRefusal makes two of three members not Ready and asks for a scale-down: the
// gate refuses, Progressing says WaitingForHealthyMembers, and etcd sees no removal.
func TestQuorumGateRefusal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	w.newCluster("q", 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("q", 3))
	w.notReady(2)
	wait.Eventually(t, convergeTimeout, "quorum loss observed", func() error {
		av := meta.FindStatusCondition(w.cluster("q").Status.Conditions, etcdv1alpha2.ConditionAvailable)
		if av == nil || av.Reason != membership.ReasonQuorumLost {
			return fmt.Errorf("Available = %+v", av)
		}
		return nil
	})
	w.setReplicas("q", 2)
	// The unready members keep the cluster from converging, so the new spec waits, and says so.
	wait.Eventually(t, convergeTimeout, "pending generation reported", func() error {
		cond := meta.FindStatusCondition(w.cluster("q").Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if cond == nil || !strings.Contains(cond.Message, "generation 2 pending; adopted when generation 1 converges or at ") {
			return fmt.Errorf("Progressing = %+v", cond)
		}
		return nil
	})
	// What `kubectl etcd retry` does: move the deadline into the past to adopt now.
	c := w.cluster("q")
	before := c.DeepCopy()
	c.Status.ProgressDeadline = &metav1.Time{Time: c.Status.ProgressDeadline.Add(-time.Hour)}
	if err := k8s.Status().Patch(t.Context(), c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "refusal reported", func() error {
		cond := meta.FindStatusCondition(w.cluster("q").Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != membership.ReasonWaitingForHealthyMembers {
			return fmt.Errorf("Progressing = %+v", cond)
		}
		if !strings.Contains(cond.Message, "not healthy: ") {
			return fmt.Errorf("message %q names no member", cond.Message)
		}
		return nil
	})
	for _, c := range w.fake("q").Mutations() {
		if c.Method == etcdfake.MemberRemove {
			t.Errorf("etcd saw %s although the gate refused", c)
		}
	}
	av := meta.FindStatusCondition(w.cluster("q").Status.Conditions, etcdv1alpha2.ConditionAvailable)
	if av == nil || av.Reason != membership.ReasonQuorumLost {
		t.Errorf("Available = %+v, want QuorumLost", av)
	}
	// One Warning each: the pending spec, the quorum loss, the refusal.
	wait.Eventually(t, convergeTimeout, "warnings", w.eventsOnce("q", "SpecChangePending", "QuorumLost", "QuorumGateBlocked"))
}
