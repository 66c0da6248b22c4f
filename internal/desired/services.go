package desired

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// Services builds the cluster's two Services (docs/api.md, "Objects and their names").
//
// The headless Service <cluster> gives every member its stable DNS name. It publishes
// not-ready addresses because members must resolve each other before they are ready: a
// starting member is not ready until it has reached its peers, and its peers find it by this
// name. It selects on the cluster label only, so learners resolve too.
//
// The client Service <cluster>-client load-balances clients over voting members only (cluster
// label + role=voter): learners cannot serve linearizable reads or writes. Its type and extra
// annotations come from spec.clientService; annotations there win over additionalMetadata,
// being the more specific setting, and reserved keys are dropped from both.
//
// Both target port numbers rather than names, so that Pods adopted from another operator, whose
// port names may differ, are endpoints too.
func Services(cluster *etcdv1alpha2.EtcdCluster) (headless, client *corev1.Service) {
	labels := mergeMetadata(additionalLabels(cluster.Spec.AdditionalMetadata), ClusterLabels(cluster.Name))
	annotations := mergeMetadata(additionalAnnotations(cluster.Spec.AdditionalMetadata), nil)

	headless = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: serviceMeta(cluster, HeadlessServiceName(cluster.Name), labels, annotations),
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{etcdv1alpha2.LabelCluster: cluster.Name},
			Ports:                    []corev1.ServicePort{servicePort(ClientPortName, ClientPort), servicePort(PeerPortName, PeerPort)},
		},
	}

	clientType := corev1.ServiceTypeClusterIP
	var extra map[string]string
	if cs := cluster.Spec.ClientService; cs != nil {
		if cs.Type != "" {
			clientType = corev1.ServiceType(cs.Type)
		}
		extra = cs.Annotations
	}
	// clientService annotations overlay additionalMetadata's; the outer merge drops reserved
	// keys from both (the API rejects them in clientService, but an object stored before that
	// rule existed must not set the operator's keys either).
	clientAnnotations := mergeMetadata(mergeMetadata(annotations, extra), nil)
	client = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: serviceMeta(cluster, ClientServiceName(cluster.Name), copyMap(labels), clientAnnotations),
		Spec: corev1.ServiceSpec{
			Type:     clientType,
			Selector: VoterSelector(cluster.Name),
			Ports:    []corev1.ServicePort{servicePort(ClientPortName, ClientPort)},
		},
	}
	return headless, client
}

func serviceMeta(cluster *etcdv1alpha2.EtcdCluster, name string, labels, annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       cluster.Namespace,
		Labels:          labels,
		Annotations:     annotations,
		OwnerReferences: []metav1.OwnerReference{clusterOwnerRef(cluster)},
	}
}

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{
		Name:       name,
		Port:       port,
		TargetPort: intstr.FromInt32(port),
		Protocol:   corev1.ProtocolTCP,
	}
}
