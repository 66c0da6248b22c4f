package desired

import (
	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// DefaultStorageSize is the CRD default of storage.size. A member built in Go without a size
// (which the API server would have defaulted) renders as if it had this one.
var DefaultStorageSize = resource.MustParse("1Gi")

// StorageSize is a StorageSpec's size as a value, with the CRD default applied when unset. It
// is the size of the PVC request, of the tmpfs sizeLimit, and the input of the default quota.
func StorageSize(s etcdv1alpha2.StorageSpec) resource.Quantity {
	if s.Size == nil {
		return DefaultStorageSize.DeepCopy()
	}
	return s.Size.DeepCopy()
}
