package desired

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// Kinds named in ownerReferences.
const (
	kindEtcdCluster = "EtcdCluster"
	kindEtcdMember  = "EtcdMember"
)

// controllerRef is a controlling ownerReference. blockOwnerDeletion keeps foreground deletion of
// the owner waiting for the dependant, so "kubectl delete --cascade=foreground" of a cluster
// returns only once its objects are gone.
func controllerRef(kind, name string, obj metav1.Object) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         etcdv1alpha2.GroupVersion.String(),
		Kind:               kind,
		Name:               name,
		UID:                obj.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// clusterOwnerRef is the ownerReference of objects that live and die with an EtcdCluster.
func clusterOwnerRef(c *etcdv1alpha2.EtcdCluster) metav1.OwnerReference {
	return controllerRef(kindEtcdCluster, c.Name, c)
}

// memberOwnerRef is the ownerReference of a member's Pod.
func memberOwnerRef(m *etcdv1alpha2.EtcdMember) metav1.OwnerReference {
	return controllerRef(kindEtcdMember, m.Name, m)
}
