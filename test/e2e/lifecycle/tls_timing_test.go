//go:build e2e

package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestBootstrapTimingMTLS measures bootstrap-3 with client and peer mTLS against plaintext in the
// same rounds, alternating, so that both see the same machine load: E2E_TIMING_RUNS rounds
// (default 3) of a plaintext and an mTLS 3-member cluster, each created, converged and deleted.
// Recorded: both medians and their difference (target: mTLS within 2 s of plaintext), never
// asserted.
func TestBootstrapTimingMTLS(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Security)
	requireOperator(f)
	var plain, mtls []time.Duration
	for i := range timingRuns(t) {
		name := fmt.Sprintf("plain%d", i)
		start := time.Now()
		createCluster(f, newCluster(f, name, 3))
		waitConverged(f, name, 3, bootstrapTimeout)
		plain = append(plain, since(start))
		deleteCluster(f, name)

		name = fmt.Sprintf("mtls%d", i)
		pki := newBYOPKI(f, name)
		ec := newCluster(f, name, 3)
		ec.Spec.TLS = pki.spec(name)
		start = time.Now()
		createCluster(f, ec)
		waitConverged(f, name, 3, bootstrapTimeout)
		mtls = append(mtls, since(start))
		deleteCluster(f, name)
	}
	p, pAll := median(plain)
	m, mAll := median(mtls)
	f.Record(fmt.Sprintf("bootstrap-3-plaintext (median of %d)", len(plain)), p, "create → converged, plaintext, alternating with the mTLS rounds; runs: "+pAll)
	f.Record(fmt.Sprintf("bootstrap-3-mtls (median of %d)", len(mtls)), m, "create → converged, client and peer mTLS; runs: "+mAll)
	f.Record("bootstrap-3-mtls-overhead", m-p, "median mTLS − median plaintext (target ≤ 2 s)")
}
