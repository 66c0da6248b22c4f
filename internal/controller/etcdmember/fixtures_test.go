package etcdmember

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

const (
	testNS         = "ns"
	testCluster    = "etcd"
	testMember     = "etcd-abcde"
	testMemberUID  = "member-uid"
	testClusterUID = "cluster-uid"
)

// member returns a joined PVC member of testCluster, adjusted by opts.
func member(opts ...func(*etcdv1alpha2.EtcdMember)) *etcdv1alpha2.EtcdMember {
	m := &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNS, Name: testMember, UID: testMemberUID, Generation: 3,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdCluster", Name: testCluster,
				UID: testClusterUID, Controller: ptr.To(true),
			}},
		},
		Spec: etcdv1alpha2.EtcdMemberSpec{
			ClusterName: testCluster, Version: "3.6.5", ClusterToken: "tok",
			InitialCluster: testMember + "=http://" + testMember + ".etcd.ns.svc:2380",
		},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

func withID(id string, voter bool) func(*etcdv1alpha2.EtcdMember) {
	return func(m *etcdv1alpha2.EtcdMember) { m.Status.MemberID, m.Status.IsVoter = id, voter }
}

func withAnnotation(k, v string) func(*etcdv1alpha2.EtcdMember) {
	return func(m *etcdv1alpha2.EtcdMember) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[k] = v
	}
}

func deleting(m *etcdv1alpha2.EtcdMember) {
	m.DeletionTimestamp = ptr.To(metav1.Now())
	m.Finalizers = []string{etcdv1alpha2.FinalizerMemberCleanup}
}

func dormant(m *etcdv1alpha2.EtcdMember) { m.Spec.Dormant = true }

func pending(m *etcdv1alpha2.EtcdMember) { m.Spec.InitialCluster = "" }

func memory(m *etcdv1alpha2.EtcdMember) { m.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory }

// pod returns the member's own Pod, ready or not.
func pod(ready bool, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNS, Name: testMember, UID: "pod-uid",
			Annotations: map[string]string{etcdv1alpha2.AnnotationTemplateHash: "h1"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdMember", Name: testMember,
				UID: testMemberUID, Controller: ptr.To(true),
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	for _, o := range opts {
		o(p)
	}
	return p
}
