package desired

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// PVC builds a member's data PVC, data-<member>, or returns nil for a Memory member, which has
// none.
//
// The PVC is deliberately not owned by the EtcdMember: deleting a member object (by mistake, or
// to re-create it) must never delete its data. Its link to the member is the member-uid
// annotation instead. Its lifetime follows the owner cluster's storage.reclaimPolicy, read from
// owner because the policy is not latched into members (PVCOwnerReferences): Delete (or unset,
// the API default) adds an ownerReference to the EtcdCluster so the claim is garbage-collected
// with it; Retain adds none. A nil owner adds none either.
//
// The returned PVC shares no memory with member or owner.
func PVC(member *etcdv1alpha2.EtcdMember, owner *etcdv1alpha2.EtcdCluster) *corev1.PersistentVolumeClaim {
	spec := &member.Spec
	if spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		return nil
	}
	annotations := map[string]string{etcdv1alpha2.AnnotationMemberUID: string(member.UID)}

	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        PVCName(member.Name),
			Namespace:   member.Namespace,
			Labels:      MemberPVCLabels(member),
			Annotations: mergeMetadata(additionalAnnotations(spec.AdditionalMetadata), annotations),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			// One member, one node: etcd's data directory is never shared.
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: StorageSize(spec.Storage)},
			},
			VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem),
		},
	}
	if spec.Storage.StorageClassName != nil {
		pvc.Spec.StorageClassName = ptr.To(*spec.Storage.StorageClassName)
	}
	if owner != nil {
		pvc.OwnerReferences = PVCOwnerReferences(nil, owner)
	}
	return pvc
}

// PVCOwnerReferences returns the ownerReferences a member's data PVC should have under owner's
// storage.reclaimPolicy, given the ones it has: any reference to owner is dropped, and under
// Delete (or unset) owner's controller reference is added back. References to other objects are
// kept, in order. It returns current itself when nothing changes, so callers can compare
// lengths and contents cheaply.
func PVCOwnerReferences(current []metav1.OwnerReference, owner *etcdv1alpha2.EtcdCluster) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, ref := range current {
		if ref.UID != owner.UID {
			out = append(out, ref)
		}
	}
	if owner.Spec.Storage.ReclaimPolicy != etcdv1alpha2.ReclaimPolicyRetain {
		out = append(out, clusterOwnerRef(owner))
	}
	if equality.Semantic.DeepEqual(out, current) || (len(out) == 0 && len(current) == 0) {
		return current
	}
	return out
}
