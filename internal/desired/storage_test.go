package desired

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestStorageSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec etcdv1alpha2.StorageSpec
		want string
	}{
		{"unset is the CRD default", etcdv1alpha2.StorageSpec{}, "1Gi"},
		{"set", etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("20Gi"))}, "20Gi"},
		{"from JSON", storageSpec("512Mi", ""), "512Mi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := StorageSize(tc.spec)
			if want := resource.MustParse(tc.want); got.Cmp(want) != 0 {
				t.Errorf("StorageSize() = %s, want %s", got.String(), tc.want)
			}
		})
	}
	// The result is a copy.
	spec := etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}
	got := StorageSize(spec)
	got.Add(resource.MustParse("1Gi"))
	if spec.Size.String() != "1Gi" {
		t.Errorf("StorageSize aliased the spec: %s", spec.Size.String())
	}
}
