//go:build e2e

package lifecycle

import (
	"testing"
	"time"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Heal scenarios (issue #5): a member fails in one of the ways docs/design/healing.md lists,
// under write traffic, and the cluster must heal to 3 voters with the same cluster ID, equal
// HashKV on every member and no acknowledged write lost. Each records its heal time (fault →
// converged with every voter again) in the timing report; the figures are published next to
// the targets of docs/design/timings.md, "Targets", never asserted.
//
// One file per fault: lost Memory members (here), damaged data dirs (heal_datadir_test.go), quorum
// loss (heal_quorum_test.go), the operator down (heal_operator_down_test.go), foreign deletions and
// re-adoption (heal_foreign_deletion_test.go), a crash loop (heal_crashloop_test.go) and a lost
// node (heal_node_test.go). What they share is in heal_helpers_test.go, what they observe in
// heal_observe_test.go.

// TestMemoryMemberReplaced loses two members of a 3-member Memory cluster under write traffic,
// one after the other: the first member's Pod is deleted, then (once healed) another member's
// Pod is evicted through the Eviction API, as a drain would. A Memory member's data goes with
// its Pod, so the operator must not start it again empty: each member turns
// Healthy=False/DataLost, is annotated removal-reason=DataLost, removed from etcd and replaced
// by a new member. After each loss: converged at 3, the lost member gone from Kubernetes and
// etcd. At the end: the same cluster ID, HashKV equal, the membership observer (at most one
// learner, no duplicate, cluster ID constant), a linearizable history with 0 acknowledged
// writes lost. memory-pod-lost-heal (the key the issue #5 target, ≤ 6 s, is tracked under) and
// memory-pod-evicted-heal record fault → converged.
func TestMemoryMemberReplaced(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "memlost"
	ec := newCluster(f, name, 3)
	ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	r := startHeal(f, ec)

	deleted := pickMember(f, name, pickAny)
	start := time.Now()
	if err := f.DeletePod(f.Ctx, f.Namespace, deleted, nil); err != nil {
		t.Fatal(err)
	}
	waitReplaced(f, name, deleted, healTimeout)
	r.hist.logStatusHealed(f, "memory-pod-lost-heal", start)
	f.Record("memory-pod-lost-heal", since(start), "Memory member's Pod deleted → replaced, converged with 3 voters, under write traffic (issue #5 target ≤ 6 s)")
	r.hist.requireReplacedFor(f, deleted, health.ReasonDataLost)

	// Another of the original members: the new one would also do, but an original one has
	// served the whole history.
	evicted := sortedKeys(r.before)[0]
	if evicted == deleted {
		evicted = sortedKeys(r.before)[1]
	}
	// As before the first loss: the member just added must have run for etcd's settle time,
	// or the next replacement's add waits for it (a second loss right after a replacement).
	waitSettled(f, name)
	start, err := f.EvictWhenAllowed(f.Ctx, f.Namespace, evicted, healTimeout)
	if err != nil {
		t.Fatal(err)
	}
	waitReplaced(f, name, evicted, healTimeout)
	r.hist.logStatusHealed(f, "memory-pod-evicted-heal", start)
	f.Record("memory-pod-evicted-heal", since(start), "Memory member's Pod evicted (Eviction API) → replaced, converged with 3 voters, under write traffic")
	r.hist.requireReplacedFor(f, evicted, health.ReasonDataLost)

	r.finishReplaced(f, "Memory members lost (Pod deleted, then another evicted) and replaced", deleted, evicted)
}
