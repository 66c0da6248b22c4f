package desired

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestServicesGolden(t *testing.T) {
	t.Parallel()
	owner := []metav1.OwnerReference{{
		APIVersion: "etcd-operator.cozystack.io/v1alpha2", Kind: "EtcdCluster", Name: "main", UID: "cluster-uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	labels := map[string]string{
		"app.kubernetes.io/name":             "etcd",
		"app.kubernetes.io/instance":         "main",
		"app.kubernetes.io/managed-by":       "etcd-operator",
		"etcd-operator.cozystack.io/cluster": "main",
	}
	clientPort := corev1.ServicePort{Name: "client", Port: 2379, TargetPort: intstr.FromInt32(2379), Protocol: corev1.ProtocolTCP}
	peerPort := corev1.ServicePort{Name: "peer", Port: 2380, TargetPort: intstr.FromInt32(2380), Protocol: corev1.ProtocolTCP}

	headless, client := Services(newCluster())

	wantHeadless := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: "prod", Labels: labels, OwnerReferences: owner},
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                "None",
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{"etcd-operator.cozystack.io/cluster": "main"},
			Ports:                    []corev1.ServicePort{clientPort, peerPort},
		},
	}
	if diff := cmp.Diff(wantHeadless, headless); diff != "" {
		t.Errorf("headless Service mismatch (-want +got):\n%s", diff)
	}
	wantClient := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "main-client", Namespace: "prod", Labels: labels, OwnerReferences: owner},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			Selector: map[string]string{
				"etcd-operator.cozystack.io/cluster": "main",
				"etcd-operator.cozystack.io/role":    "voter",
			},
			Ports: []corev1.ServicePort{clientPort},
		},
	}
	if diff := cmp.Diff(wantClient, client); diff != "" {
		t.Errorf("client Service mismatch (-want +got):\n%s", diff)
	}
}

func TestServicesCustomisation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                                  string
		mut                                   func(*etcdv1alpha2.EtcdCluster)
		wantType                              corev1.ServiceType
		wantHeadlessAnnotations, wantClientAn map[string]string
		wantLabel                             string
	}{
		{"defaults", func(*etcdv1alpha2.EtcdCluster) {}, corev1.ServiceTypeClusterIP, nil, nil, ""},
		{"load balancer with annotations", func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{
				Type:        "LoadBalancer",
				Annotations: map[string]string{"lb.example/internal": "true"},
			}
		}, corev1.ServiceTypeLoadBalancer, nil, map[string]string{"lb.example/internal": "true"}, ""},
		{"clientService without type keeps ClusterIP", func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{}
		}, corev1.ServiceTypeClusterIP, nil, nil, ""},
		{"node port", func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{Type: "NodePort"}
		}, corev1.ServiceTypeNodePort, nil, nil, ""},
		{"additional metadata on both, clientService annotations win on the client Service", func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{
				Labels:      map[string]string{"team": "db", etcdv1alpha2.LabelCluster: "other"},
				Annotations: map[string]string{"owner": "db", "lb.example/internal": "false", etcdv1alpha2.ReservedPrefix + "x": "y"},
			}
			c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{
				Annotations: map[string]string{"lb.example/internal": "true", etcdv1alpha2.ReservedPrefix + "z": "w"},
			}
		}, corev1.ServiceTypeClusterIP,
			map[string]string{"owner": "db", "lb.example/internal": "false"},
			map[string]string{"owner": "db", "lb.example/internal": "true"}, "db"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			headless, client := Services(newCluster(tc.mut))
			if client.Spec.Type != tc.wantType {
				t.Errorf("client type = %s, want %s", client.Spec.Type, tc.wantType)
			}
			if headless.Spec.Type != corev1.ServiceTypeClusterIP || headless.Spec.ClusterIP != corev1.ClusterIPNone {
				t.Errorf("headless Service is %s/%s", headless.Spec.Type, headless.Spec.ClusterIP)
			}
			if diff := cmp.Diff(tc.wantHeadlessAnnotations, headless.Annotations); diff != "" {
				t.Errorf("headless annotations mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantClientAn, client.Annotations); diff != "" {
				t.Errorf("client annotations mismatch (-want +got):\n%s", diff)
			}
			for _, svc := range []*corev1.Service{headless, client} {
				if svc.Labels[etcdv1alpha2.LabelCluster] != "main" || svc.Labels["team"] != tc.wantLabel {
					t.Errorf("%s labels = %v", svc.Name, svc.Labels)
				}
			}
			// The two Services must not share maps: SSA helpers mutate them independently.
			client.Labels["mutated"] = "x"
			if _, shared := headless.Labels["mutated"]; shared {
				t.Error("headless and client Services share their labels map")
			}
		})
	}
}
