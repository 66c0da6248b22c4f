package etcdcluster_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestWithMemberController runs both controllers: the EtcdMember controller creates PVCs and
// Pods, reports Ready and Updated and holds its finalizer until the member has left etcd; this
// controller does everything else. Only the kubelet and etcd are faked. It bootstraps 3, scales
// to 1 through the finalizer handshake, pauses and resumes.
func TestWithMemberController(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.kubeletOnly = true
	w.startController()
	w.newCluster("both", 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("both", 3))

	w.setReplicas("both", 1)
	wait.Eventually(t, convergeTimeout, "1 member", w.converged("both", 1))
	wait.Eventually(t, convergeTimeout, "removed members and their PVCs gone", func() error {
		ms, err := w.members(context.Background(), "both")
		if err != nil {
			return err
		}
		if len(ms) != 1 {
			return fmt.Errorf("%d EtcdMembers", len(ms))
		}
		var pvcs corev1.PersistentVolumeClaimList
		if err := k8s.List(context.Background(), &pvcs, client.InNamespace(w.ns)); err != nil {
			return err
		}
		for _, p := range pvcs.Items {
			if p.DeletionTimestamp.IsZero() && p.Name != "data-"+ms[0].Name {
				return fmt.Errorf("PVC %s of a removed member remains", p.Name)
			}
		}
		return nil
	})

	w.setReplicas("both", 0)
	wait.Eventually(t, convergeTimeout, "paused", w.paused("both"))
	w.setReplicas("both", 3)
	wait.Eventually(t, convergeTimeout, "resumed to 3", w.converged("both", 3))
}
