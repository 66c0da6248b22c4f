package metrics

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Like the other tests of this package, these share package-level state and do not run in
// parallel; each uses its own namespace and forgets its clusters.

func healthyThree() ClusterState {
	return ClusterState{
		Desired: 3, Ready: 3, Voters: 3, QuorumMargin: 1, EtcdKnown: true, Leader: 0xa,
		Alarms: map[string]int{"NOSPACE": 1}, QuotaBytes: 1000,
		Members: []MemberState{
			{Name: "m-a", Up: true, DBSize: 500, DBSizeInUse: 300},
			{Name: "m-b", Up: true, DBSize: 250, DBSizeInUse: 200},
			{Name: "m-c"},
		},
	}
}

func TestSetClusterState(t *testing.T) {
	t.Cleanup(func() { ForgetClusterState("cs1", "etcd") })
	SetClusterState("cs1", "etcd", healthyThree())
	want := map[string]string{
		"etcd_operator_cluster_desired_members": `etcd_operator_cluster_desired_members{cluster="etcd",namespace="cs1"} 3`,
		"etcd_operator_cluster_quorum_margin":   `etcd_operator_cluster_quorum_margin{cluster="etcd",namespace="cs1"} 1`,
		"etcd_operator_cluster_has_leader":      `etcd_operator_cluster_has_leader{cluster="etcd",namespace="cs1"} 1`,
		"etcd_operator_cluster_learners":        `etcd_operator_cluster_learners{cluster="etcd",namespace="cs1"} 0`,
		"etcd_operator_cluster_alarms": `etcd_operator_cluster_alarms{cluster="etcd",namespace="cs1",type="CORRUPT"} 0
etcd_operator_cluster_alarms{cluster="etcd",namespace="cs1",type="NOSPACE"} 1`,
		"etcd_operator_member_up": `etcd_operator_member_up{cluster="etcd",member="m-a",namespace="cs1"} 1
etcd_operator_member_up{cluster="etcd",member="m-b",namespace="cs1"} 1
etcd_operator_member_up{cluster="etcd",member="m-c",namespace="cs1"} 0`,
		// m-c did not answer: no size, rather than an old one.
		"etcd_operator_member_quota_usage_ratio": `etcd_operator_member_quota_usage_ratio{cluster="etcd",member="m-a",namespace="cs1"} 0.5
etcd_operator_member_quota_usage_ratio{cluster="etcd",member="m-b",namespace="cs1"} 0.25`,
		"etcd_operator_cluster_leader_changes_total": `etcd_operator_cluster_leader_changes_total{cluster="etcd",namespace="cs1"} 0`,
	}
	for name, series := range want {
		compareSeries(t, name, series)
	}
}

// compareSeries compares the series of the registered family name, one per line as
// name{label="value",...} value, labels sorted, with series.
func compareSeries(t *testing.T, name, series string) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() { // the registry sorts them by name
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			lines = append(lines, fmt.Sprintf("%s{%s} %v", name, strings.Join(labels, ","), v))
		}
	}
	slices.Sort(lines)
	if got := strings.Join(lines, "\n"); got != series {
		t.Errorf("%s:\n%s\nwant:\n%s", name, got, series)
	}
}

func TestLeaderChanges(t *testing.T) {
	t.Cleanup(func() { ForgetClusterState("cs2", "etcd") })
	st := healthyThree()
	for _, leader := range []uint64{0xa, 0xa, 0, 0xb, 0xb, 0xa} {
		st.Leader = leader
		SetClusterState("cs2", "etcd", st)
	}
	// a→b and b→a; the pass without a leader is not a change of its own.
	if got := testutil.ToFloat64(leaderChanges.WithLabelValues("cs2", "etcd")); got != 2 {
		t.Errorf("leader changes = %v, want 2", got)
	}
	unknown := st
	unknown.EtcdKnown, unknown.Leader = false, 0
	SetClusterState("cs2", "etcd", unknown)
	if got := testutil.ToFloat64(hasLeader.WithLabelValues("cs2", "etcd")); got != 0 {
		t.Errorf("has_leader while etcd is unknown = %v, want 0", got)
	}
	if n := testutil.CollectAndCount(alarmsActive); n != 0 {
		t.Errorf("%d alarm series while etcd is unknown, want none", n)
	}
}

func TestMemberSeriesFollowTheMembers(t *testing.T) {
	t.Cleanup(func() { ForgetClusterState("cs3", "etcd") })
	st := healthyThree()
	SetClusterState("cs3", "etcd", st)
	st.Members = st.Members[:1] // m-b and m-c left
	SetClusterState("cs3", "etcd", st)
	for _, g := range memberGauges {
		if n := testutil.CollectAndCount(g); n != 1 {
			t.Errorf("%d series of a member gauge after two members left, want m-a's only", n)
		}
	}
}

// TestPausedClusterHasNoQuorumMargin: a paused cluster has no quorum to lose, so the alert on
// the margin has nothing to fire on.
func TestPausedClusterHasNoQuorumMargin(t *testing.T) {
	t.Cleanup(func() { ForgetClusterState("cs4", "etcd") })
	SetClusterState("cs4", "etcd", healthyThree())
	SetClusterState("cs4", "etcd", ClusterState{EtcdKnown: true, QuorumMargin: -1})
	if n := testutil.CollectAndCount(quorumMargin); n != 0 {
		t.Errorf("%d quorum margin series for a paused cluster, want none", n)
	}
}

// TestForgetClusterState: a deleted cluster's series go, every other cluster's stay.
func TestForgetClusterState(t *testing.T) {
	t.Cleanup(func() { ForgetClusterState("cs5", "kept") })
	for _, c := range []string{"gone", "kept"} {
		SetClusterState("cs5", c, healthyThree())
		MembershipAction("cs5", c, "Promote", OutcomeSuccess)
	}
	both := countSeries(t)
	ForgetClusterState("cs5", "gone")
	for i, n := range countSeries(t) {
		if n*2 != both[i] {
			t.Errorf("family %d: %d series after forgetting cs5/gone, want %d (cs5/kept's)", i, n, both[i]/2)
		}
	}
	ForgetClusterState("cs5", "kept")
	for i, n := range countSeries(t) {
		if n != 0 {
			t.Errorf("family %d: %d series left after forgetting both clusters", i, n)
		}
	}
}

// countSeries counts the series of every per-cluster family, in a fixed order.
func countSeries(t *testing.T) []int {
	t.Helper()
	var out []int
	for _, c := range []prometheus.Collector{alarmsActive, leaderChanges, membershipActions} {
		out = append(out, testutil.CollectAndCount(c))
	}
	for _, g := range append(slices.Clone(clusterGauges), memberGauges...) {
		out = append(out, testutil.CollectAndCount(g))
	}
	return out
}
