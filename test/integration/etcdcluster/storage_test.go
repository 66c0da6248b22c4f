package etcdcluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// storageClass creates a StorageClass named after the test's namespace (classes are
// cluster-scoped and tests run in parallel) and returns its name.
func (w *world) storageClass(expandable bool) string {
	w.t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: w.ns + "-class"},
		Provisioner:          "example.com/test",
		AllowVolumeExpansion: ptr.To(expandable),
	}
	if err := k8s.Create(w.t.Context(), sc); err != nil {
		w.t.Fatalf("creating StorageClass %s: %v", sc.Name, err)
	}
	w.t.Cleanup(func() { _ = k8s.Delete(context.Background(), sc) })
	return sc.Name
}

// newClusterInClass creates a 3-member EtcdCluster of 1Gi members in StorageClass class.
func (w *world) newClusterInClass(name, class string) {
	w.t.Helper()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi")), StorageClassName: ptr.To(class)}},
	}
	if err := k8s.Create(w.t.Context(), c); err != nil {
		w.t.Fatalf("creating EtcdCluster %s: %v", name, err)
	}
}

// setStorageSize patches spec.storage.size.
func (w *world) setStorageSize(name, size string) {
	w.t.Helper()
	c := w.cluster(name)
	before := c.DeepCopy()
	c.Spec.Storage.Size = ptr.To(resource.MustParse(size))
	if err := k8s.Patch(w.t.Context(), c, client.MergeFrom(before)); err != nil {
		w.t.Fatalf("setting the storage size of %s to %s: %v", name, size, err)
	}
}

// pvcs returns the cluster's data PVCs.
func (w *world) pvcs(ctx context.Context, cluster string) ([]corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := k8s.List(ctx, &list, client.InNamespace(w.ns), client.MatchingLabels{etcdv1alpha2.LabelCluster: cluster}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// bindPVCs plays the PV controller, which envtest does not run: every PVC of the cluster is
// Bound with capacity equal to its request. Only a bound claim may be resized.
func (w *world) bindPVCs(t *testing.T, cluster string) {
	t.Helper()
	wait.Eventually(t, convergeTimeout, "PVCs bound", func() error {
		pvcs, err := w.pvcs(t.Context(), cluster)
		if err != nil {
			return err
		}
		for i := range pvcs {
			if err := setCapacity(t.Context(), &pvcs[i], pvcs[i].Spec.Resources.Requests[corev1.ResourceStorage]); err != nil {
				return err
			}
		}
		return nil
	})
}

// setCapacity plays the PV controller binding a claim, or the resizer finishing an expansion:
// phase Bound and status.capacity q.
func setCapacity(ctx context.Context, pvc *corev1.PersistentVolumeClaim, q resource.Quantity) error {
	before := pvc.DeepCopy()
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: q}
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	return k8s.Status().Patch(ctx, pvc, client.MergeFrom(before))
}

// progressing waits for the cluster's Progressing condition to have status st and reason, and
// returns its message.
func (w *world) progressing(t *testing.T, name string, st metav1.ConditionStatus, reason string) string {
	t.Helper()
	var msg string
	wait.Eventually(t, convergeTimeout, "Progressing="+string(st)+"/"+reason, func() error {
		c := w.cluster(name)
		p := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if p == nil || p.Status != st || p.Reason != reason {
			return fmt.Errorf("Progressing %+v: %w", p, errNotYet)
		}
		msg = p.Message
		return nil
	})
	return msg
}

// pvcsRequest checks that every PVC of the cluster asks for q.
func (w *world) pvcsRequest(cluster string, q resource.Quantity) func() error {
	return func() error {
		pvcs, err := w.pvcs(context.Background(), cluster)
		if err != nil {
			return err
		}
		for _, p := range pvcs {
			if got := p.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(q) != 0 {
				return fmt.Errorf("PVC %s asks for %s: %w", p.Name, got.String(), errNotYet)
			}
		}
		return nil
	}
}

// resize plays the external resizer: every PVC of the cluster reports capacity q.
func (w *world) resize(t *testing.T, cluster string, q resource.Quantity) {
	t.Helper()
	pvcs, err := w.pvcs(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pvcs {
		if err := setCapacity(t.Context(), &pvcs[i], q); err != nil {
			t.Fatal(err)
		}
	}
}

// convergedOnSize checks that the 3-member cluster converged with every member's
// spec.storage.size at q.
func (w *world) convergedOnSize(cluster string, q resource.Quantity) func() error {
	conv := w.converged(cluster, 3)
	return func() error {
		if err := conv(); err != nil {
			return err
		}
		ms, err := w.members(context.Background(), cluster)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.Spec.Storage.Size.Cmp(q) != 0 {
				return fmt.Errorf("member %s has spec.storage.size %s: %w", m.Name, m.Spec.Storage.Size, errNotYet)
			}
		}
		return nil
	}
}

// requireQuota checks that the Pod of each member runs with flag.
func (w *world) requireQuota(t *testing.T, ms []etcdv1alpha2.EtcdMember, flag string) {
	t.Helper()
	for _, m := range ms {
		pod := &corev1.Pod{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: m.Name}, pod); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(pod.Spec.Containers[0].Args, flag) {
			t.Errorf("Pod %s does not run with %s: %v", m.Name, flag, pod.Spec.Containers[0].Args)
		}
	}
}

// TestStorageGrowthExpandable grows spec.storage.size of a 3-member cluster in a class that
// allows expansion: every PVC's request is raised at once, the cluster is
// Progressing=True/ExpandingStorage until the volumes report the size (the test plays the
// resizer), then each member's spec.storage.size follows with one StorageExpanded each, the
// default quota (size/2) rolls the members, and the cluster converges. Members keep their etcd
// IDs: growth changes no membership.
func TestStorageGrowthExpandable(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	w.startController()
	class := w.storageClass(true)
	w.newClusterInClass("grow", class)
	wait.Eventually(t, realConvergeTimeout, "bootstrap of 3 real members", w.converged("grow", 3))
	w.bindPVCs(t, "grow")
	ids := memberIDs(t, w, "grow")
	done := len(w.real.mutations())

	w.setStorageSize("grow", "2Gi")
	two := resource.MustParse("2Gi")
	wait.Eventually(t, convergeTimeout, "every PVC asks for 2Gi", w.pvcsRequest("grow", two))
	msg := w.progressing(t, "grow", metav1.ConditionTrue, membership.ReasonExpandingStorage)
	if !strings.Contains(msg, "spec.storage.size 2Gi") {
		t.Errorf("ExpandingStorage message %q does not name spec.storage.size 2Gi", msg)
	}
	// Until its volume grew, no member carries the new size, nor restarts for its quota.
	ms, err := w.members(t.Context(), "grow")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Spec.Storage.Size.Cmp(two) == 0 {
			t.Errorf("member %s has spec.storage.size 2Gi before its volume grew", m.Name)
		}
	}
	w.resize(t, "grow", two)
	wait.Eventually(t, rollTimeout, "converged on 2Gi", w.convergedOnSize("grow", two))
	w.requireQuota(t, ms, "--quota-backend-bytes=1073741824")
	if got := memberIDs(t, w, "grow"); !mapsEqual(got, ids) {
		t.Errorf("member IDs %v, were %v", got, ids)
	}
	if calls := w.real.mutations()[done:]; len(calls) > 0 {
		t.Errorf("storage growth changed etcd's membership: %v", calls)
	}
	wait.Eventually(t, convergeTimeout, "3 StorageExpanded Events", func() error {
		notes, err := w.eventNotes(t.Context(), "StorageExpanded")
		if err != nil {
			return err
		}
		if len(notes) != 3 {
			return fmt.Errorf("StorageExpanded %q, want 3: %w", notes, errNotYet)
		}
		return nil
	})
}

// TestStorageGrowthUnsupported grows spec.storage.size of a cluster whose StorageClass does not
// allow expansion: no PVC is touched, Progressing=False/StorageExpansionUnsupported names the
// class and the fix (with one Warning), the cluster still counts as converged (a later spec is
// adopted at once), and a new member gets the new size.
func TestStorageGrowthUnsupported(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	w.startController()
	class := w.storageClass(false)
	w.newClusterInClass("fixed", class)
	wait.Eventually(t, realConvergeTimeout, "bootstrap of 3 real members", w.converged("fixed", 3))
	w.bindPVCs(t, "fixed")

	w.setStorageSize("fixed", "2Gi")
	msg := w.progressing(t, "fixed", metav1.ConditionFalse, membership.ReasonStorageExpansionUnsupported)
	for _, want := range []string{"StorageClass " + class, "allowVolumeExpansion: true", "spec.storage.size 2Gi", etcdv1alpha2.AnnotationReplace} {
		if !strings.Contains(msg, want) {
			t.Errorf("StorageExpansionUnsupported message %q does not say %q", msg, want)
		}
	}
	wait.Eventually(t, convergeTimeout, "one StorageExpansionUnsupported Warning", func() error {
		notes, err := w.eventNotes(t.Context(), membership.ReasonStorageExpansionUnsupported)
		if err != nil {
			return err
		}
		if len(notes) != 1 {
			return fmt.Errorf("Warnings %q, want 1: %w", notes, errNotYet)
		}
		return nil
	})

	// Counts as converged: the next spec is adopted without waiting for a deadline.
	w.setReplicas("fixed", 4)
	two := resource.MustParse("2Gi")
	wait.Eventually(t, realConvergeTimeout, "a fourth member with 2Gi", w.grownByOne("fixed", two))
	w.bindPVCs(t, "fixed")
	w.progressing(t, "fixed", metav1.ConditionFalse, membership.ReasonStorageExpansionUnsupported)
}

// grownByOne checks that cluster name adopted its generation with 4 members, of which only the
// new one has a PVC of size, as its spec asks.
func (w *world) grownByOne(name string, size resource.Quantity) func(context.Context) error {
	return func(ctx context.Context) error {
		c := w.cluster(name)
		if c.Status.ObservedGeneration != c.Generation {
			return fmt.Errorf("generation %d not adopted: %w", c.Generation, errNotYet)
		}
		ms, err := w.members(ctx, name)
		if err != nil {
			return err
		}
		if len(ms) != 4 || len(w.etcdMembers(name)) != 4 {
			return fmt.Errorf("%d members: %w", len(ms), errNotYet)
		}
		grown := 0
		for _, m := range ms {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: desired.PVCName(m.Name)}, pvc); err != nil {
				return err
			}
			q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			if m.Spec.Storage.Size.Cmp(size) == 0 && q.Cmp(size) == 0 {
				grown++
			}
		}
		if grown != 1 {
			return fmt.Errorf("%d members with a %s PVC, want the new one only: %w", grown, size.String(), errNotYet)
		}
		return nil
	}
}
