package etcdmember_test

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestReclaimPolicyReachesExistingPVC: storage.reclaimPolicy "may be changed at any time", so a
// change must reach the PVC that exists already, both ways (before, only a new PVC got it, and
// after Delete → Retain deleting the cluster still deleted every existing PVC). The PVC also
// records the cluster ID, once there is one, for a re-created cluster to recognise its data.
func TestReclaimPolicyReachesExistingPVC(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "")
	m := newMember(t, c)
	owned := func(want bool) func(context.Context) error {
		return func(ctx context.Context) error {
			pvc, err := getPVC(ctx, m)
			if err != nil {
				return err
			}
			has := false
			for _, ref := range pvc.OwnerReferences {
				has = has || (ref.UID == c.UID && ref.Controller != nil && *ref.Controller)
			}
			if has != want {
				return fmt.Errorf("PVC owned by the cluster: %t, want %t (%+v)", has, want, pvc.OwnerReferences)
			}
			return nil
		}
	}
	wait.Eventually(t, convergeTimeout, "a new PVC owned by the cluster (Delete)", owned(true))
	setPolicy(t, c, etcdv1alpha2.ReclaimPolicyRetain)
	wait.Eventually(t, convergeTimeout, "the existing PVC unowned after Delete → Retain", owned(false))
	setPolicy(t, c, etcdv1alpha2.ReclaimPolicyDelete)
	wait.Eventually(t, convergeTimeout, "the existing PVC owned again after Retain → Delete", owned(true))

	if pvc, err := getPVC(t.Context(), m); err != nil || pvc.Annotations[etcdv1alpha2.AnnotationClusterID] != "" {
		t.Fatalf("before the cluster ID is latched the PVC records one: %v, %v", pvc.Annotations, err)
	}
	c.Status.ClusterID = "c1d"
	if err := k8sClient.Status().Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "the PVC records the cluster ID", func(ctx context.Context) error {
		pvc, err := getPVC(ctx, m)
		if err == nil && pvc.Annotations[etcdv1alpha2.AnnotationClusterID] != "c1d" {
			err = fmt.Errorf("annotations %v", pvc.Annotations)
		}
		return err
	})
}

// setPolicy patches c's storage.reclaimPolicy.
func setPolicy(t *testing.T, c *etcdv1alpha2.EtcdCluster, p etcdv1alpha2.ReclaimPolicy) {
	t.Helper()
	if err := k8sClient.Get(t.Context(), client.ObjectKeyFromObject(c), c); err != nil {
		t.Fatal(err)
	}
	before := c.DeepCopy()
	c.Spec.Storage.ReclaimPolicy = p
	if err := k8sClient.Patch(t.Context(), c, client.MergeFrom(before)); err != nil {
		t.Fatalf("setting reclaimPolicy %s: %v", p, err)
	}
}
