package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// readyVoters is an observation of n Ready voters a, b, c, … with their Pods, latched at target.
func readyVoters(target int32, names ...string) *observation {
	var ms []etcdv1alpha2.EtcdMember
	var list []etcdclient.Member
	for i, n := range names {
		m := member(n, false)
		m.Status.IsVoter, m.Status.MemberID = true, etcdclient.FormatID(uint64(i+1))
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionReady, Status: metav1.ConditionTrue, Reason: "PodReady"})
		ms = append(ms, m)
		list = append(list, etcdclient.Member{ID: uint64(i + 1), Name: n, PeerURLs: []string{desired.PeerURL(&m)}, ClientURLs: []string{"http://10.0.0.1:2379"}})
	}
	o := testObservation(&etcdfake.Recorder{Members: list}, ms...)
	o.cluster.Status.Observed.Replicas = target
	o.pods = map[string]*corev1.Pod{}
	for _, n := range names {
		o.pods[n] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, UID: typesUID("pod-" + n)}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	return o
}

// TestStatusCountsWhatARemovalLeft: the pass that removes the last surplus member of a
// scale-down reports the members that are left, not those it began with, so readyMembers reaches
// the target in that pass and not one later.
func TestStatusCountsWhatARemovalLeft(t *testing.T) {
	t.Parallel()
	o := readyVoters(3, "a", "b", "c", "d")
	plan := planPass(o)
	if plan.Action.Kind != membership.KindRemove {
		t.Fatalf("planned %+v, want a removal", plan.Action)
	}
	before := renderStatus(o, &plan, effects{})
	if before.status.ReadyMembers != 4 {
		t.Fatalf("before the removal: readyMembers %d, want 4", before.status.ReadyMembers)
	}
	a := plan.Action
	after := renderStatus(o, &plan, effects{removed: &removal{member: a.Member, reason: a.RemovalReason, memberID: a.MemberID, inEtcd: a.InEtcd}})
	if after.status.ReadyMembers != 3 || after.counts.Voters != 3 {
		t.Errorf("after removing %s: readyMembers %d, voters %d; want 3 and 3", a.Member, after.status.ReadyMembers, after.counts.Voters)
	}
	if o.etcd.Members[3].ID == 0 || len(o.etcd.Members) != 4 {
		t.Error("rendering status changed the observation")
	}
}
