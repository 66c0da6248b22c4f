package etcdmember_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestRecreatedMemberWaitsForItsPVC force-deletes a running member (its finalizer stripped, the
// guard bypassed) and re-creates it under the same name, as the EtcdCluster controller's
// re-adoption does. Until the PVC's member-uid names the new member, and until the garbage
// collector has deleted the old member's Pod, the member only waits: no Pod, no write to the
// PVC or the old Pod, no OwnershipConflict Warning. Then its Pod comes back on the same PVC,
// under the same etcd name, joining as an existing member.
func TestRecreatedMemberWaitsForItsPVC(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	name := "etcd-back"
	named := func(m *etcdv1alpha2.EtcdMember) { m.GenerateName, m.Name = "", name }
	old := newMember(t, c, named)
	oldPod := waitPod(t, old)
	var pvc *corev1.PersistentVolumeClaim
	wait.Eventually(t, convergeTimeout, "PVC of the first member, recording the cluster ID", func(ctx context.Context) (err error) {
		pvc, err = getPVC(ctx, old)
		if err == nil && pvc.Annotations[etcdv1alpha2.AnnotationClusterID] != "c1d" {
			err = fmt.Errorf("annotations %v", pvc.Annotations)
		}
		return err
	})

	// kubectl delete, then the finalizer stripped by hand: envtest runs no garbage collector,
	// so the old Pod stays, as it does for a while on a real cluster.
	if err := k8sClient.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	patchMember(t, old, func(m *etcdv1alpha2.EtcdMember) {
		controllerutil.RemoveFinalizer(m, etcdv1alpha2.FinalizerMemberCleanup)
	})
	waitGone(t, old)
	back := newMember(t, c, named)
	if back.UID == old.UID {
		t.Fatal("the re-created member has the old UID")
	}

	waitCondition(t, back, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPodNotReady,
		"PVC "+pvc.Name, string(old.UID), "re-adopt")
	wait.Consistently(t, steadyWindow, "PVC and old Pod untouched, no conflict reported", untouched(back, pvc, oldPod))

	// The EtcdCluster controller's rewrite: the PVC is the new member's now.
	base := pvc.DeepCopy()
	pvc.Annotations[etcdv1alpha2.AnnotationMemberUID] = string(back.UID)
	if err := k8sClient.Patch(t.Context(), pvc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, back, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPodNotReady, "garbage collector")
	// The garbage collector's part.
	if err := k8sClient.Delete(t.Context(), oldPod, client.GracePeriodSeconds(0), client.Preconditions{UID: &oldPod.UID}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "a Pod of the re-created member on the same PVC", func(ctx context.Context) error {
		p, err := getPod(ctx, back)
		if err != nil {
			return err
		}
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != back.UID {
			return fmt.Errorf("Pod controlled by %+v", ref)
		}
		if p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Name {
			return fmt.Errorf("data volume %+v, want PVC %s", p.Spec.Volumes[0], pvc.Name)
		}
		// Its data directory holds the member already: etcd starts from it as that member
		// (same --name, same --data-dir) and never bootstraps a new cluster.
		for _, arg := range []string{"--name=" + name, "--data-dir=/var/lib/etcd", "--initial-cluster-state=existing"} {
			if !hasArg(p, arg) {
				return fmt.Errorf("Pod args %v lack %s", p.Spec.Containers[0].Args, arg)
			}
		}
		return nil
	})
	cur, err := getPVC(t.Context(), back)
	if err != nil {
		t.Fatal(err)
	}
	if cur.UID != pvc.UID {
		t.Errorf("PVC %s was re-created (UID %s → %s)", pvc.Name, pvc.UID, cur.UID)
	}
}

// untouched checks that a re-created member left its predecessor's PVC and Pod as they were and
// reported no ownership conflict.
func untouched(m *etcdv1alpha2.EtcdMember, pvc *corev1.PersistentVolumeClaim, oldPod *corev1.Pod) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		cur, err := getPVC(ctx, m)
		if err != nil {
			return err
		}
		if cur.ResourceVersion != pvc.ResourceVersion || !cur.DeletionTimestamp.IsZero() {
			return fmt.Errorf("the PVC changed: rv %s → %s, deletion %v", pvc.ResourceVersion, cur.ResourceVersion, cur.DeletionTimestamp)
		}
		p, err := getPod(ctx, m)
		if err != nil {
			return err
		}
		if p.UID != oldPod.UID || !p.DeletionTimestamp.IsZero() {
			return fmt.Errorf("the old Pod was replaced or deleted: UID %s → %s, deletion %v", oldPod.UID, p.UID, p.DeletionTimestamp)
		}
		n, err := countEvents(ctx, m.Namespace, m.Name, corev1.EventTypeWarning, etcdmember.EventOwnershipConflict)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%d OwnershipConflict Warnings", n)
		}
		return nil
	}
}
