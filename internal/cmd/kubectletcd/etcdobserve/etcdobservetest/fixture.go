// Package etcdobservetest builds the healthy three-member cluster that the unit tests of the
// commands talking to etcd start from: the EtcdCluster, its EtcdMembers and Ready Pods, and a
// scripted etcd whose members answer Status with demo-a as the leader. Tests change the fixture
// before calling Env.
package etcdobservetest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Namespace and Cluster name the fixture's cluster.
const (
	Namespace = "tenant"
	Cluster   = "demo"
)

// Member IDs of demo-a, demo-b and demo-c.
const (
	IDA uint64 = 0x6c1f0e2b8a4d7731
	IDB uint64 = 0xa03d5c9e11b2f408
	IDC uint64 = 0xd4e8f61a97c0b2e5
)

// Fixture is a cluster as the API server and etcd show it.
type Fixture struct {
	Cluster *etcdv1alpha2.EtcdCluster
	// Members and Pods are by member name.
	Members map[string]*etcdv1alpha2.EtcdMember
	Pods    map[string]*corev1.Pod
	// Extra objects to add (EtcdDefrags, Events).
	Extra []client.Object
	// Etcd is copied into the Env's scripted etcd.
	EtcdMembers []etcdclient.Member
	// Statuses are by member name.
	Statuses map[string]etcdclient.Status
	Alarms   []etcdclient.Alarm
}

// ThreeMembers is a healthy cluster of demo-a (leader), demo-b and demo-c at revision 5120,
// every member Ready and Updated, on a 4Gi volume (quota 2 GiB).
func ThreeMembers() *Fixture {
	f := &Fixture{
		Cluster: &etcdv1alpha2.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Cluster, Generation: 7},
			Spec: etcdv1alpha2.EtcdClusterSpec{
				Replicas: ptr.To[int32](3),
				Storage:  etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("4Gi"))},
			},
		},
		Members:  map[string]*etcdv1alpha2.EtcdMember{},
		Pods:     map[string]*corev1.Pod{},
		Statuses: map[string]etcdclient.Status{},
	}
	applied := map[string]uint64{"demo-a": 9000, "demo-b": 8990, "demo-c": 8995}
	for name, id := range map[string]uint64{"demo-a": IDA, "demo-b": IDB, "demo-c": IDC} {
		f.Members[name] = member(name, id)
		f.Pods[name] = pod(name)
		f.EtcdMembers = append(f.EtcdMembers, etcdclient.Member{ID: id, Name: name})
		f.Statuses[name] = etcdclient.Status{
			ID: id, Leader: IDA, Version: "3.6.5", DBSize: 48 << 20, DBSizeInUse: 31 << 20,
			RaftIndex: 9000, RaftAppliedIndex: applied[name], RaftTerm: 4, Revision: 5120,
		}
	}
	return f
}

// SetUpdated sets the Updated condition of member name.
func (f *Fixture) SetUpdated(name string, updated bool) {
	status := metav1.ConditionFalse
	if updated {
		status = metav1.ConditionTrue
	}
	conds := f.Members[name].Status.Conditions
	for i := range conds {
		if conds[i].Type == etcdv1alpha2.ConditionUpdated {
			conds[i].Status = status
		}
	}
}

// SetPodReady sets the Ready condition of member name's Pod.
func (f *Fixture) SetPodReady(name string, ready bool) {
	f.Pods[name].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: condition(ready)}}
}

// Env builds the test's Deps over the fixture.
func (f *Fixture) Env(tb testing.TB) *invocationtest.Env {
	tb.Helper()
	var objs []client.Object
	if f.Cluster != nil {
		objs = append(objs, f.Cluster)
	}
	for _, m := range f.Members {
		objs = append(objs, m)
	}
	for _, p := range f.Pods {
		objs = append(objs, p)
	}
	objs = append(objs, f.Extra...)
	e := invocationtest.New(tb, Namespace, objs...)
	e.Etcd.Members = f.EtcdMembers
	e.Etcd.Alarms = f.Alarms
	e.Etcd.Statuses = map[string]etcdclient.Status{}
	for name, st := range f.Statuses {
		st.Endpoint = invocationtest.Endpoint(name)
		e.Etcd.Statuses[invocationtest.Endpoint(name)] = st
	}
	e.Etcd.StatusErr = errNoAnswer
	return e
}

type noAnswer struct{}

func (noAnswer) Error() string { return "context deadline exceeded" }

// errNoAnswer is what a member without a scripted Status answers.
var errNoAnswer error = noAnswer{}

func member(name string, id uint64) *etcdv1alpha2.EtcdMember {
	return &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{etcdv1alpha2.LabelCluster: Cluster}},
		Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: Cluster, Version: "3.6.5"},
		Status: etcdv1alpha2.EtcdMemberStatus{
			MemberID: etcdclient.FormatID(id), PodName: name, IsVoter: true, Version: "3.6.5",
			Conditions: []metav1.Condition{{Type: etcdv1alpha2.ConditionUpdated, Status: metav1.ConditionTrue, Reason: "Updated", LastTransitionTime: metav1.NewTime(invocationtest.Now)}},
		},
	}
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{etcdv1alpha2.LabelCluster: Cluster}},
		Spec:       corev1.PodSpec{NodeName: "node-" + name[len(name)-1:]},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

func condition(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// Mutating are the calls among calls that change etcd: what a dry run must never make.
func Mutating(calls []string) []string {
	var out []string
	for _, c := range calls {
		for _, m := range []string{"AlarmDisarm", "MoveLeader", "Compact", "Defragment"} {
			if strings.HasPrefix(c, m+" ") {
				out = append(out, c)
			}
		}
	}
	return out
}
