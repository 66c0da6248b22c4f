// Package gatetest builds the objects of a running cluster for unit tests of kubectl-etcd's
// membership commands: an EtcdCluster, its EtcdMembers as the operator's controllers leave them,
// and their Pods.
package gatetest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Namespace and ClusterName are where the fixtures live.
const (
	Namespace   = "tenant"
	ClusterName = "demo"
	// ClusterID is the fixtures' status.clusterID.
	ClusterID = "8e9e05c52164694d"
)

// Cluster is a converged PVC cluster of replicas members: Available=True/QuorumHealthy.
func Cluster(replicas int32) *etcdv1alpha2.EtcdCluster {
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ClusterName, Generation: 4},
		Spec: etcdv1alpha2.EtcdClusterSpec{
			Replicas: ptr.To(replicas),
			Version:  "3.6.16",
			Storage:  etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
		},
		Status: etcdv1alpha2.EtcdClusterStatus{
			ClusterID: ClusterID, ReadyMembers: replicas, ObservedGeneration: 4,
			Conditions: []metav1.Condition{
				Cond(etcdv1alpha2.ConditionAvailable, metav1.ConditionTrue, "QuorumHealthy", "all voters Ready"),
				Cond(etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse, "Reconciled", "converged"),
				Cond(etcdv1alpha2.ConditionDegraded, metav1.ConditionFalse, "QuorumHealthy", "no member needs attention"),
			},
		},
	}
}

// Cond is a condition set at invocationtest.Now.
func Cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(invocationtest.Now.Add(-time.Hour))}
}

// Member is a Ready, healthy, updated voter of the fixture cluster with etcd member ID id.
func Member(name string, id uint64) *etcdv1alpha2.EtcdMember {
	return &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: Namespace, Name: name, Labels: map[string]string{etcdv1alpha2.LabelCluster: ClusterName},
		},
		Spec: etcdv1alpha2.EtcdMemberSpec{ClusterName: ClusterName, Version: "3.6.16", InitialCluster: name + "=http://" + name, ClusterToken: "t"},
		Status: etcdv1alpha2.EtcdMemberStatus{
			MemberID: etcdclient.FormatID(id), PodName: name, IsVoter: true, Version: "3.6.16",
			Conditions: []metav1.Condition{
				Cond(etcdv1alpha2.ConditionReady, metav1.ConditionTrue, "PodReady", "Pod is Ready"),
				Cond(etcdv1alpha2.ConditionHealthy, metav1.ConditionTrue, "Healthy", "answers Status"),
				Cond(etcdv1alpha2.ConditionUpdated, metav1.ConditionTrue, "Updated", "runs its template"),
			},
		},
	}
}

// Pod is member name's Pod, Running and Ready.
func Pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{etcdv1alpha2.LabelCluster: ClusterName}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
}

// Names of the members Objects makes, in order; member i has ID i+1.
var Names = []string{"demo-4kq9d", "demo-7vx2m", "demo-x7k2p", "demo-b2c3d", "demo-f5g6h"}

// Objects is the cluster c with len(members) healthy voters (members[i] has ID i+1) and their
// Pods; edit the members before the objects are used, e.g. with Unhealthy.
func Objects(c *etcdv1alpha2.EtcdCluster, members ...*etcdv1alpha2.EtcdMember) []client.Object {
	objs := []client.Object{c}
	for _, m := range members {
		objs = append(objs, m)
		if !m.Spec.Dormant && m.Spec.InitialCluster != "" {
			objs = append(objs, Pod(m.Name))
		}
	}
	return objs
}

// Healthy is n healthy voters named from Names.
func Healthy(n int) []*etcdv1alpha2.EtcdMember {
	out := make([]*etcdv1alpha2.EtcdMember, 0, n)
	for i := range n {
		out = append(out, Member(Names[i], uint64(i+1)))
	}
	return out
}

// Unhealthy marks m Healthy=False with reason and not Ready.
func Unhealthy(m *etcdv1alpha2.EtcdMember, reason string) *etcdv1alpha2.EtcdMember {
	for i, c := range m.Status.Conditions {
		switch c.Type {
		case etcdv1alpha2.ConditionHealthy:
			m.Status.Conditions[i] = Cond(c.Type, metav1.ConditionFalse, reason, "the member controller says "+reason)
		case etcdv1alpha2.ConditionReady:
			m.Status.Conditions[i] = Cond(c.Type, metav1.ConditionFalse, "PodNotReady", "Pod is not Ready")
		}
	}
	return m
}
