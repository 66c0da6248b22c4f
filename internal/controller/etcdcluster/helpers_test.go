package etcdcluster

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

func typesUID(s string) types.UID { return types.UID(s) }

// member is an EtcdMember of cluster c in namespace ns; a pending one has no initialCluster.
func member(name string, pending bool) etcdv1alpha2.EtcdMember {
	m := etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: typesUID("uid-" + name)},
		Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: "c", InitialCluster: "x"},
	}
	if pending {
		m.Spec.InitialCluster = ""
	}
	return m
}

// testObservation is a pass's observation of a formed cluster c whose etcd (rec) lists
// rec.Members, each answering Status with member 1 as leader.
func testObservation(rec *etcdfake.Recorder, members ...etcdv1alpha2.EtcdMember) *observation {
	c := testCluster()
	c.Status.ClusterID = "cid"
	c.Status.Observed = membership.ObservedFromSpec(&c.Spec)
	o := &observation{cluster: c, now: time.Unix(0, 0), members: members, etcdClient: rec}
	o.etcd = membership.Etcd{Known: true, Members: rec.Members, Statuses: map[uint64]etcdclient.Status{}, Leader: 1}
	for _, e := range rec.Members {
		o.etcd.Statuses[e.ID] = etcdclient.Status{ID: e.ID, Leader: 1}
	}
	return o
}

// testExecutor carries out the plan of o (planned as the controller would) with no Kubernetes
// client: executors are tested here only on paths that end before a Kubernetes write.
func testExecutor(o *observation) (*executor, *events.FakeRecorder) {
	rec := events.NewFakeRecorder(10)
	r := New(nil, nil, rec, nil)
	return r.executor(o, planPass(o)), rec
}
