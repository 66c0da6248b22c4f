package desired

import (
	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// DefaultStorageSize is the CRD default of storage.size. A member built in Go without a size
// (which the API server would have defaulted) renders as if it had this one.
var DefaultStorageSize = resource.MustParse("1Gi")

// StorageSize is a StorageSpec's size as a value, with the CRD default applied when unset.
//
// It accepts the size field both as a value and as a pointer: the API is moving from the first
// to the second (so that Go clients leaving it unset get the server default rather than "0"),
// and this keeps the builders compiling across that change.
func StorageSize(s etcdv1alpha2.StorageSpec) resource.Quantity {
	switch v := any(s.Size).(type) {
	case *resource.Quantity:
		if v != nil {
			return v.DeepCopy()
		}
	case resource.Quantity:
		return v.DeepCopy()
	}
	return DefaultStorageSize.DeepCopy()
}
