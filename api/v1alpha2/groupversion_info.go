package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every kind in this package.
var GroupVersion = schema.GroupVersion{Group: "etcd-operator.cozystack.io", Version: "v1alpha2"}

var (
	// SchemeBuilder registers this package's kinds with a runtime.Scheme. It is built from
	// apimachinery alone so that the API package imports nothing but API machinery.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&EtcdCluster{}, &EtcdClusterList{},
		&EtcdMember{}, &EtcdMemberList{},
		&EtcdSnapshot{}, &EtcdSnapshotList{},
		&EtcdSnapshotSchedule{}, &EtcdSnapshotScheduleList{},
		&EtcdDefrag{}, &EtcdDefragList{},
		&EtcdDefragPolicy{}, &EtcdDefragPolicyList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
