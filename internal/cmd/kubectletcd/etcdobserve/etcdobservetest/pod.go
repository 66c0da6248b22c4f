package etcdobservetest

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Pods is a healthy three-member cluster as compatibility mode (--pod) sees it: no EtcdCluster
// and no EtcdMember, only pods, whose names are their members' etcd names, Running and Ready as
// given, and etcd scripted like ThreeMembers with the first Pod (by name) as the leader. pods
// are moved into the namespace of the fixture; their specs are the caller's (a legacy
// StatefulSet's Pods, or this operator's).
func Pods(pods ...*corev1.Pod) *Fixture {
	f := &Fixture{Members: nil, Pods: map[string]*corev1.Pod{}, Statuses: map[string]etcdclient.Status{}}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	ids := []uint64{IDA, IDB, IDC}
	applied := []uint64{9000, 8990, 8995}
	for i, p := range pods {
		p = p.DeepCopy()
		p.Namespace = Namespace
		f.Pods[p.Name] = p
		id := ids[i%len(ids)] + uint64(i/len(ids))
		f.EtcdMembers = append(f.EtcdMembers, etcdclient.Member{ID: id, Name: p.Name,
			PeerURLs: []string{"https://" + p.Name + ".peers:2380"}, ClientURLs: []string{"http://" + p.Name + ".peers:2379"}})
		f.Statuses[p.Name] = etcdclient.Status{
			ID: id, Leader: IDA, Version: "3.5.12", DBSize: 48 << 20, DBSizeInUse: 31 << 20, ClusterID: 0x8e9e05c52164694d,
			RaftIndex: 9000, RaftAppliedIndex: applied[i%len(applied)], RaftTerm: 4, Revision: 5120,
		}
	}
	return f
}

// PodEnv is Env in pod mode through Pod pod.
func (f *Fixture) PodEnv(tb testing.TB, pod string) *invocationtest.Env {
	tb.Helper()
	e := f.Env(tb)
	e.Deps.Globals.Pod = pod
	return e
}
