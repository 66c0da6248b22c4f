package defrag

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func run(name, cluster string, created time.Time, phase etcdv1alpha2.DefragPhase) etcdv1alpha2.EtcdDefrag {
	return etcdv1alpha2.EtcdDefrag{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       etcdv1alpha2.EtcdDefragSpec{ClusterRef: corev1Ref(cluster)},
		Status:     etcdv1alpha2.EtcdDefragStatus{Phase: phase},
	}
}

func clusterWith(gen, observed int64, status metav1.ConditionStatus, reason string) *etcdv1alpha2.EtcdCluster {
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: gen}}
	c.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ConditionProgressing, Status: status, Reason: reason, ObservedGeneration: observed}}
	return c
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	self := run("self", "c", t0, "")
	converged := clusterWith(2, 2, metav1.ConditionFalse, ReasonReconciled)
	cases := []struct {
		name    string
		others  []etcdv1alpha2.EtcdDefrag
		cluster *etcdv1alpha2.EtcdCluster
		want    string
	}{
		{"converged, alone", nil, converged, ReasonRunning},
		{"no cluster", nil, nil, ReasonClusterNotFound},
		{"another run is Running", []etcdv1alpha2.EtcdDefrag{run("z", "c", t0.Add(time.Hour), etcdv1alpha2.DefragPhaseRunning)}, converged, ReasonQueued},
		{"an older run is Pending", []etcdv1alpha2.EtcdDefrag{run("z", "c", t0.Add(-time.Second), etcdv1alpha2.DefragPhasePending)}, converged, ReasonQueued},
		{"same second, earlier name", []etcdv1alpha2.EtcdDefrag{run("a", "c", t0, "")}, converged, ReasonQueued},
		{"same second, later name", []etcdv1alpha2.EtcdDefrag{run("z", "c", t0, "")}, converged, ReasonRunning},
		{"an older run is final", []etcdv1alpha2.EtcdDefrag{run("a", "c", t0.Add(-time.Hour), etcdv1alpha2.DefragPhaseFailed)}, converged, ReasonRunning},
		{"another cluster's run is Running", []etcdv1alpha2.EtcdDefrag{run("a", "other", t0, etcdv1alpha2.DefragPhaseRunning)}, converged, ReasonRunning},
		{"cluster rolling", nil, clusterWith(2, 2, metav1.ConditionTrue, "RollingUpdate"), ReasonWaitingForCluster},
		{"cluster has not observed its spec", nil, clusterWith(3, 2, metav1.ConditionFalse, ReasonReconciled), ReasonWaitingForCluster},
		{"cluster past its deadline", nil, clusterWith(2, 2, metav1.ConditionFalse, "DeadlineExceeded"), ReasonWaitingForCluster},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := Admit(&self, append(tc.others, self), tc.cluster)
			if a.Reason != tc.want || a.Admitted != (tc.want == ReasonRunning) || (!a.Admitted && a.Message == "") {
				t.Errorf("Admit = %+v, want reason %s", a, tc.want)
			}
		})
	}
}

func TestRunningOn(t *testing.T) {
	t.Parallel()
	runs := []etcdv1alpha2.EtcdDefrag{
		run("b", "c", t0, etcdv1alpha2.DefragPhaseRunning), run("a", "c", t0, etcdv1alpha2.DefragPhaseRunning),
		run("p", "c", t0, etcdv1alpha2.DefragPhasePending), run("x", "other", t0, etcdv1alpha2.DefragPhaseRunning),
	}
	if got := RunningOn("c", runs); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("RunningOn = %v", got)
	}
}
