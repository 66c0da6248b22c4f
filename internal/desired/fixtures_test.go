package desired

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// Names used by every fixture.
const (
	testNamespace  = "prod"
	testCluster    = "main"
	testMemberName = "main-x7k2p"
	testToken      = "prod-main-0b5e6c1f" //nolint:gosec // G101: an etcd --initial-cluster-token is a cluster identifier, not a credential
	testInitial    = "main-x7k2p=http://main-x7k2p.main.prod.svc:2380"
)

// newMember returns a plain PVC-backed voter of version 3.6.5 with the API defaults applied,
// changed by the given mutators.
func newMember(mut ...func(*etcdv1alpha2.EtcdMember)) *etcdv1alpha2.EtcdMember {
	m := &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{
			Name:      testMemberName,
			Namespace: testNamespace,
			UID:       "member-uid-1",
		},
		Spec: etcdv1alpha2.EtcdMemberSpec{
			ClusterName:    testCluster,
			Version:        "3.6.5",
			Storage:        storageSpec("1Gi", ""),
			InitialCluster: testInitial,
			ClusterToken:   testToken,
			Replicas:       1,
		},
		Status: etcdv1alpha2.EtcdMemberStatus{IsVoter: true},
	}
	for _, f := range mut {
		f(m)
	}
	return m
}

// newCluster returns an EtcdCluster named testCluster, changed by the given mutators.
func newCluster(mut ...func(*etcdv1alpha2.EtcdCluster)) *etcdv1alpha2.EtcdCluster {
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: testCluster, Namespace: testNamespace, UID: "cluster-uid-1"},
		Spec: etcdv1alpha2.EtcdClusterSpec{
			Version: "3.6.5",
			Storage: storageSpec("1Gi", ""),
		},
	}
	for _, f := range mut {
		f(c)
	}
	return c
}

// storageSpec builds a StorageSpec through JSON, the way the API server hands it to the
// operator.
func storageSpec(size string, medium etcdv1alpha2.StorageMedium) etcdv1alpha2.StorageSpec {
	var s etcdv1alpha2.StorageSpec
	raw := fmt.Sprintf(`{"size":%q,"medium":%q,"reclaimPolicy":"Delete"}`, size, medium)
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		panic(err)
	}
	return s
}

// setSize replaces the size of a StorageSpec, keeping its other fields.
func setSize(s *etcdv1alpha2.StorageSpec, size string) {
	n := storageSpec(size, s.Medium)
	s.Size = n.Size
}

func ref(name string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: name} }
