package etcdcluster_test

import (
	"fmt"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/series"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// perClusterSeries are the per-cluster series the cluster controller sets every pass
// (docs/monitoring.md, "Metrics").
var perClusterSeries = []string{
	"etcd_operator_cluster_desired_members", "etcd_operator_cluster_ready_members",
	"etcd_operator_cluster_voters", "etcd_operator_cluster_learners", "etcd_operator_cluster_quorum_margin",
	"etcd_operator_cluster_has_leader", "etcd_operator_cluster_quota_backend_bytes",
	"etcd_operator_cluster_rolling_update_in_progress", "etcd_operator_cluster_heal_in_progress",
	"etcd_operator_cluster_alarms", "etcd_operator_cluster_leader_changes_total",
	"etcd_operator_membership_actions_total", "etcd_operator_member_up", "etcd_operator_member_db_size_bytes",
	"etcd_operator_member_db_size_in_use_bytes", "etcd_operator_member_quota_usage_ratio",
}

// TestClusterMetrics: the cluster controller sets the per-cluster series from each pass's view:
// a converged cluster of three, a member whose endpoint stops answering, a leader change and an
// alarm; deleting the cluster drops every series that names it.
func TestClusterMetrics(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController()
	c := w.newCluster("mon", 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("mon", 3))
	cluster := map[string]string{"namespace": w.ns, "cluster": "mon"}
	victim := checkConvergedSeries(t, w, cluster)

	w.mute("mon", victim, true)
	w.touch("mon")
	wait.Eventually(t, convergeTimeout, victim+" not answering", func() error {
		member := map[string]string{"namespace": w.ns, "cluster": "mon", "member": victim}
		if s, ok := series.Get(t, "etcd_operator_member_db_size_bytes", member); ok {
			return fmt.Errorf("a database size %v of a member that does not answer", s.Value)
		}
		return seriesValues(t, member, map[string]float64{"etcd_operator_member_up": 0})()
	})
	w.mute("mon", victim, false)

	checkLeaderChangeAndAlarm(t, w, cluster)

	if err := k8s.Delete(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "no series of the deleted cluster", func() error {
		for _, name := range perClusterSeries {
			if s, ok := series.Get(t, name, cluster); ok {
				return fmt.Errorf("%s still %v", name, s.Value)
			}
		}
		return nil
	})
}

// checkConvergedSeries waits for the series of a converged cluster "mon" of three, and returns
// the name of one of its members.
func checkConvergedSeries(t *testing.T, w *world, cluster map[string]string) string {
	t.Helper()
	wait.Eventually(t, convergeTimeout, "the series of a converged cluster", seriesValues(t, cluster, map[string]float64{
		"etcd_operator_cluster_desired_members": 3, "etcd_operator_cluster_ready_members": 3,
		"etcd_operator_cluster_voters": 3, "etcd_operator_cluster_learners": 0, "etcd_operator_cluster_quorum_margin": 1,
		"etcd_operator_cluster_has_leader": 1, "etcd_operator_cluster_rolling_update_in_progress": 0,
		"etcd_operator_cluster_heal_in_progress": 0,
	}))
	ms, err := w.members(t.Context(), "mon")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		member := map[string]string{"namespace": w.ns, "cluster": "mon", "member": m.Name}
		wait.Eventually(t, convergeTimeout, m.Name+"'s series", seriesValues(t, member, map[string]float64{
			"etcd_operator_member_up": 1, "etcd_operator_member_db_size_bytes": 1 << 20, "etcd_operator_member_db_size_in_use_bytes": 1 << 19,
		}))
	}
	promoted := map[string]string{"namespace": w.ns, "cluster": "mon", "type": "Promote", "outcome": "success"}
	if s, ok := series.Get(t, "etcd_operator_membership_actions_total", promoted); !ok || s.Value != 2 {
		t.Errorf("promotions counted %v (present %t), want the 2 of the bootstrap", s.Value, ok)
	}
	return ms[0].Name
}

// checkLeaderChangeAndAlarm elects another leader of cluster "mon" and raises a NOSPACE alarm,
// and waits for the series to say so.
func checkLeaderChangeAndAlarm(t *testing.T, w *world, cluster map[string]string) {
	t.Helper()
	f := w.fake("mon")
	for _, e := range f.Members() {
		if e.ID != f.Leader() {
			if err := f.Elect(e.ID); err != nil {
				t.Fatal(err)
			}
			f.RaiseAlarm(etcdclient.Alarm{MemberID: e.ID, Type: etcdclient.AlarmNoSpace})
			break
		}
	}
	w.touch("mon")
	wait.Eventually(t, convergeTimeout, "a leader change and a NOSPACE alarm", func() error {
		if err := seriesValues(t, map[string]string{"namespace": w.ns, "cluster": "mon", "type": "NOSPACE"},
			map[string]float64{"etcd_operator_cluster_alarms": 1})(); err != nil {
			return err
		}
		if s, _ := series.Get(t, "etcd_operator_cluster_leader_changes_total", cluster); s.Value < 1 {
			return fmt.Errorf("leader changes %v, want at least 1", s.Value)
		}
		return nil
	})
}

// seriesValues checks that the series of each name whose labels include labels has the value
// given.
func seriesValues(tb testing.TB, labels map[string]string, want map[string]float64) func() error {
	tb.Helper()
	return func() error {
		for name, v := range want {
			s, ok := series.Get(tb, name, labels)
			if !ok || s.Value != v {
				return fmt.Errorf("%s = %v (present %t), want %v", name, s.Value, ok, v)
			}
		}
		return nil
	}
}
