package etcdcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
)

// TestClusterStateFromTheRenderedStatus: the per-cluster series come from what the pass
// rendered (counts, etcd's answers), with no etcd call of their own.
func TestClusterStateFromTheRenderedStatus(t *testing.T) {
	t.Parallel()
	o := readyVoters(3, "a", "b", "c")
	o.etcd.Members = append(o.etcd.Members, etcdclient.Member{ID: 9, Name: "d", IsLearner: true})
	o.etcd.Alarms = []etcdclient.Alarm{{MemberID: 1, Type: etcdclient.AlarmNoSpace}}
	o.etcd.Statuses[1] = etcdclient.Status{ID: 1, Leader: 1, DBSize: 800, DBSizeInUse: 400}
	delete(o.etcd.Statuses, 3) // c did not answer
	plan := planPass(o)
	r := renderStatus(o, &plan, effects{})
	got := clusterState(&r, 1000)
	want := metrics.ClusterState{
		Desired: 3, Ready: 3, Voters: 3, QuorumMargin: 1, EtcdKnown: true, Learners: 1, Leader: 1,
		Alarms: map[string]int{"NOSPACE": 1}, QuotaBytes: 1000,
		Members: []metrics.MemberState{
			{Name: "a", Up: true, DBSize: 800, DBSizeInUse: 400},
			{Name: "b", Up: true},
			{Name: "c"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clusterState mismatch (-want +got):\n%s", diff)
	}
}

// TestQuorumMarginWhenQuorumIsLost: one Ready voter of three is one short of quorum.
func TestQuorumMarginWhenQuorumIsLost(t *testing.T) {
	t.Parallel()
	o := readyVoters(3, "a", "b", "c")
	for i := range o.members[1:] {
		o.members[i+1].Status.Conditions = nil
	}
	plan := planPass(o)
	r := renderStatus(o, &plan, effects{})
	if got := clusterState(&r, 1000).QuorumMargin; got != -1 {
		t.Errorf("quorum margin with 1 of 3 voters Ready = %d, want -1", got)
	}
}

// TestRunningQuota: members run the latched options, not an edit that waits for adoption.
func TestRunningQuota(t *testing.T) {
	t.Parallel()
	c := testCluster()
	c.Spec.Storage.Size = ptr.To(resource.MustParse("1Gi"))
	if got := runningQuota(c); got != 512<<20 {
		t.Errorf("quota before adoption = %d, want half of 1Gi", got)
	}
	c.Status.Observed = &etcdv1alpha2.ObservedClusterSpec{Options: &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](100 << 20)}}
	if got := runningQuota(c); got != 100<<20 {
		t.Errorf("quota once latched = %d, want the latched 100Mi", got)
	}
}

// TestForgetDropsTheClusterSeries: the deletion path (Reconcile on a missing or deleted
// cluster) drops every per-cluster series.
func TestForgetDropsTheClusterSeries(t *testing.T) {
	t.Parallel()
	key := types.NamespacedName{Namespace: "forget-test", Name: "c"}
	metrics.SetClusterState(key.Namespace, key.Name, metrics.ClusterState{Desired: 3, EtcdKnown: true,
		Members: []metrics.MemberState{{Name: "a", Up: true}}})
	metrics.MembershipAction(key.Namespace, key.Name, metricPromote, metrics.OutcomeSuccess)
	if n := seriesOf(t, key.Namespace); n == 0 {
		t.Fatal("no series recorded")
	}
	New(nil, nil, nil, nil).forget(key)
	if n := seriesOf(t, key.Namespace); n != 0 {
		t.Errorf("%d series of the deleted cluster left", n)
	}
}

// seriesOf counts the registered series labelled with namespace.
func seriesOf(t *testing.T, namespace string) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == namespace {
					n++
				}
			}
		}
	}
	return n
}
