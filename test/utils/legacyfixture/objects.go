package legacyfixture

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}
}

// headlessService gives every member <pod>.<headless>.<namespace>.svc, also before it is
// Ready, which a forming cluster needs.
func headlessService(o Options, c *legacy.EtcdCluster) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: legacy.HeadlessServiceName(c), Namespace: o.Namespace, Labels: legacy.Selector(o.Name)},
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 legacy.Selector(o.Name),
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{servicePort("peer", legacy.PeerPort), servicePort("client", legacy.ClientPort)},
		},
	}
}

func clientService(o Options, c *legacy.EtcdCluster) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: legacy.ClientServiceName(c), Namespace: o.Namespace, Labels: legacy.Selector(o.Name)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: legacy.Selector(o.Name),
			Ports:    []corev1.ServicePort{servicePort("client", legacy.ClientPort)},
		},
	}
}

// stateConfigMap is the environment etcd bootstraps from: every ordinal's peer URL, the token,
// and "new" until the first quorum, "existing" after.
func stateConfigMap(o Options, c *legacy.EtcdCluster) *corev1.ConfigMap {
	peers := make([]string, 0, o.Replicas)
	for i := range int(o.Replicas) {
		pod := legacy.PodName(o.Name, i)
		peers = append(peers, fmt.Sprintf("%s=https://%s.%s.%s.svc:%d", pod, pod, legacy.HeadlessServiceName(c), o.Namespace, legacy.PeerPort))
	}
	state := "new"
	if o.Formed {
		state = "existing"
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: legacy.StateConfigMapName(o.Name), Namespace: o.Namespace},
		Data: map[string]string{
			legacy.EnvInitialClusterState: state,
			legacy.EnvInitialCluster:      strings.Join(peers, ","),
			legacy.EnvInitialClusterToken: legacy.ClusterToken(o.Name, o.Namespace),
		},
	}
}
