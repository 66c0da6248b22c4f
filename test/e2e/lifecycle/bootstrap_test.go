//go:build e2e

package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestBootstrap creates clusters of 1, 3 and 5 members and checks the converged state:
// Available=True/QuorumHealthy, readyMembers = N, N EtcdMembers, N started voters in etcd's
// member list (dialled by Pod IP) with the latched cluster ID, Pods on distinct nodes when N ≤
// the node count, the PDB (minAvailable N/2+1 over voters), both Services with their selectors
// and the client Service's endpoints (voters only). It then deletes the cluster and checks
// that nothing is left (reclaimPolicy Delete). All three sizes are in the smoke set.
func TestBootstrap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n      int
		labels []framework.Label
	}{
		{1, []framework.Label{framework.Smoke}},
		{3, []framework.Label{framework.Smoke}},
		{5, []framework.Label{framework.Smoke}},
	} {
		t.Run(fmt.Sprintf("%d-members", tc.n), func(t *testing.T) {
			t.Parallel()
			f := framework.NewTest(t, tc.labels...)
			requireOperator(f)
			name := fmt.Sprintf("boot%d", tc.n)
			ec := newCluster(f, name, int32(tc.n))
			start := time.Now()
			createCluster(f, ec)
			ec = waitConverged(f, name, tc.n, bootstrapTimeout)
			f.Record(fmt.Sprintf("bootstrap-%d", tc.n), since(start), "create → Available=True/QuorumHealthy with N voters")
			checkMembership(f, ec, tc.n)
			checkObjects(f, name, tc.n, nodeCount(f))
			if t.Failed() {
				return
			}
			start = time.Now()
			deleteCluster(f, name)
			waitNothingLeft(f, name, false)
			f.Record(fmt.Sprintf("delete-%d", tc.n), since(start), "delete → members, Pods, Services, PDB, PVCs gone")
		})
	}
}
