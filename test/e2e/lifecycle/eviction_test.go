//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestEvictionRefusedBelowQuorum drains like `kubectl drain` does, through the Eviction API, on
// a converged 3-member cluster: the first voter's eviction is allowed (the PDB's minAvailable is
// 2), a second voter's eviction is refused with 429 while the first is gone, and the evicted
// member comes back with the same identity (PVC member) and the cluster converges again.
func TestEvictionRefusedBelowQuorum(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke, framework.Disruptive)
	requireOperator(f)
	const name = "evict"
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	idsBefore := checkMembership(f, ec, 3)
	err := f.Poll("PDB to allow exactly one disruption", time.Minute, func(ctx context.Context) (bool, string, error) {
		pdb, err := f.Kube.PolicyV1().PodDisruptionBudgets(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == 1 && pdb.Status.CurrentHealthy == 3,
			fmt.Sprintf("healthy %d desired %d allowed %d", pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.DisruptionsAllowed), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil || len(pods.Items) != 3 {
		t.Fatalf("voter Pods: %d, %v", len(pods.Items), err)
	}
	first, second := pods.Items[0], pods.Items[1]
	start := time.Now()
	if err := f.EvictPod(f.Ctx, f.Namespace, first.Name); err != nil {
		t.Fatalf("evicting the first voter %s: %v, want it allowed (201)", first.Name, err)
	}
	err = f.EvictPod(f.Ctx, f.Namespace, second.Name)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting a second voter %s while %s is evicted: err = %v, want 429 TooManyRequests from the PDB", second.Name, first.Name, err)
	}
	t.Logf("second eviction refused: %v", err)
	if err := f.WaitForPodGone(f.Ctx, f.Namespace, first.Name, first.UID, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	ec = waitConverged(f, name, 3, scaleTimeout)
	f.Record("evicted-member-back", since(start), "eviction of one voter → converged at 3 again")
	idsAfter := checkMembership(f, ec, 3)
	if idsAfter[first.Name] != idsBefore[first.Name] {
		t.Errorf("evicted member %s came back with ID %q, had %q (a PVC member keeps its identity)", first.Name, idsAfter[first.Name], idsBefore[first.Name])
	}
}
