package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

func testCluster() *etcdv1alpha2.EtcdCluster {
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "uid-c"},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To(int32(3)), Version: "3.6.5"},
	}
}

func TestServiceUpdate(t *testing.T) {
	t.Parallel()
	c := testCluster()
	_, want := desired.Services(c)

	// What the API server returns: defaults filled in, a foreign label, an allocated node port.
	have := want.DeepCopy()
	have.Spec.ClusterIP = "10.0.0.7"
	have.Spec.SessionAffinity = corev1.ServiceAffinityNone
	have.Labels["team"] = "db"
	if next := serviceUpdate(have, want); next != nil {
		t.Errorf("an unchanged Service is written: %+v", next)
	}

	c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{Type: "NodePort", Annotations: map[string]string{"lb": "x"}}
	_, want = desired.Services(c)
	have.Spec.Ports[0].NodePort = 31000
	next := serviceUpdate(have, want)
	if next == nil {
		t.Fatal("a changed Service is not written")
	}
	if next.Spec.Type != corev1.ServiceTypeNodePort || next.Annotations["lb"] != "x" || next.Labels["team"] != "db" ||
		next.Spec.ClusterIP != "10.0.0.7" || next.Spec.Ports[0].NodePort != 31000 {
		t.Errorf("serviceUpdate = %+v", next)
	}
}

func TestPDBUpdate(t *testing.T) {
	t.Parallel()
	c := testCluster()
	want := desired.PDB(c, 1, 3)
	if pdbUpdate(want.DeepCopy(), want) != nil {
		t.Error("an unchanged PDB is written")
	}
	next := pdbUpdate(want, desired.PDB(c, 4, 5))
	if next == nil || next.Spec.MinAvailable.IntValue() != 3 {
		t.Errorf("pdbUpdate = %+v, want minAvailable 3", next)
	}
	if desired.PDB(c, 0, 0) != nil {
		t.Error("a PDB is wanted with no voters")
	}
}
