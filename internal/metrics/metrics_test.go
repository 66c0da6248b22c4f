package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The tests share package-level state, so they do not run in parallel.
func TestClustersByReason(t *testing.T) {
	SetClusterConditions("ns/a", map[string]ConditionState{"Available": {"True", "QuorumHealthy"}})
	SetClusterConditions("ns/b", map[string]ConditionState{"Available": {"True", "QuorumHealthy"}})
	SetClusterConditions("ns/c", map[string]ConditionState{"Available": {"False", "QuorumLost"}})
	if got := testutil.ToFloat64(clustersByReason.WithLabelValues("Available", "True", "QuorumHealthy")); got != 2 {
		t.Errorf("healthy clusters = %v, want 2", got)
	}
	SetClusterConditions("ns/b", map[string]ConditionState{"Available": {"False", "QuorumLost"}})
	ForgetCluster("ns/c")
	if got := testutil.ToFloat64(clustersByReason.WithLabelValues("Available", "False", "QuorumLost")); got != 1 {
		t.Errorf("quorum-lost clusters = %v, want 1", got)
	}
	ForgetCluster("ns/a")
	ForgetCluster("ns/b")
}

func TestCounters(t *testing.T) {
	t.Cleanup(func() { ForgetClusterState("ns", "counters") })
	MembershipAction("ns", "counters", "Promote", OutcomeWaiting)
	if got := testutil.ToFloat64(membershipActions.WithLabelValues("ns", "counters", "Promote", OutcomeWaiting)); got != 1 {
		t.Errorf("promote waiting = %v, want 1", got)
	}
	StepDuration("etcdcluster", "scope", time.Millisecond)
	if n := testutil.CollectAndCount(stepDuration); n != 1 {
		t.Errorf("step series = %d, want 1", n)
	}
}
