// +kubebuilder:object:generate=true
// +groupName=etcd-operator.cozystack.io

// Package v1alpha2 holds the etcd-operator.cozystack.io/v1alpha2 API: the EtcdCluster, EtcdMember and
// EtcdSnapshot kinds, their kubebuilder and CEL validation markers, and the message strings those
// rules return. It contains types only; behaviour lives under internal/.
package v1alpha2
