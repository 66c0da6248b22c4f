package adopt

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// AnnotationRestartBaseline is set on an adopted EtcdMember: it records its Pod's UID and container
// restart count when the member was created, "<uid>/<count>", so that `etcd-migrate verify`
// can tell later that the adoption restarted nothing.
const AnnotationRestartBaseline = etcdv1alpha2.ReservedPrefix + "migrated-restart-baseline"

// RestartBaseline renders AnnotationRestartBaseline.
func RestartBaseline(uid types.UID, restarts int32) string {
	return fmt.Sprintf("%s/%d", uid, restarts)
}

// CheckOwnCluster says whether an existing EtcdCluster of the legacy cluster's name is one an
// earlier run created (migrated-from), which step 1 then leaves alone, or a foreign one, which
// stops this cluster's adoption.
func CheckOwnCluster(c *etcdv1alpha2.EtcdCluster) error {
	if c.Annotations[etcdv1alpha2.AnnotationMigratedFrom] == "" {
		return fmt.Errorf("an EtcdCluster %s/%s exists that etcd-migrate did not create (no migrated-from annotation); rename or remove it, then re-run", c.Namespace, c.Name)
	}
	return nil
}

// StatusPrefilled says step 1's status write is done: the cluster ID is latched.
func StatusPrefilled(c *etcdv1alpha2.EtcdCluster) bool { return c.Status.ClusterID != "" }

// MemberStatusPrefilled says step 2's status write of a member is done.
func MemberStatusPrefilled(m *etcdv1alpha2.EtcdMember) bool { return m.Status.MemberID != "" }

// HeadlessOwners are the legacy headless Service's ownerReferences after step 3: one
// non-controller reference per adopted member, sorted by name, so that the Service is collected
// only once the last adopted member is gone.
func HeadlessOwners(members []etcdv1alpha2.EtcdMember) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(members))
	for _, m := range members {
		out = append(out, metav1.OwnerReference{APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdMember", Name: m.Name, UID: m.UID})
	}
	slices.SortFunc(out, func(a, b metav1.OwnerReference) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ControlledBy says whether obj's controller is the object with uid.
func ControlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// withoutLegacyControllers drops the references to the legacy StatefulSet and EtcdCluster,
// whose orphan deletion the garbage collector may not have finished when step 6 runs; an object
// can have one controller only.
func withoutLegacyControllers(refs []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range refs {
		legacySTS := r.Kind == "StatefulSet" && strings.HasPrefix(r.APIVersion, "apps/")
		legacyCluster := r.Kind == legacy.KindEtcdCluster && r.APIVersion == legacy.GroupVersion.String()
		if !legacySTS && !legacyCluster {
			out = append(out, r)
		}
	}
	return out
}

// ReownPod is the Pod after step 6: this project's labels (role=voter included), the member's
// template hash, and the member as its controller. It returns nil when the Pod has all of that.
func ReownPod(pod *corev1.Pod, m *etcdv1alpha2.EtcdMember) *corev1.Pod {
	want := pod.DeepCopy()
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	maps.Copy(want.Labels, desired.OperatorPodLabels(m))
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[etcdv1alpha2.AnnotationTemplateHash] = m.Annotations[etcdv1alpha2.AnnotationTemplateHash]
	refs := []metav1.OwnerReference{}
	for _, r := range withoutLegacyControllers(pod.OwnerReferences) {
		if r.UID != m.UID {
			refs = append(refs, r)
		}
	}
	want.OwnerReferences = append(refs, metav1.OwnerReference{
		APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdMember", Name: m.Name, UID: m.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	})
	if equality.Semantic.DeepEqual(want.ObjectMeta, pod.ObjectMeta) {
		return nil
	}
	return want
}

// ReownPVC is the PVC after step 6: the member's labels, its member-uid, and an ownerReference
// to the cluster unless its reclaimPolicy is Retain (as the operator keeps it,
// desired.PVCOwnerReferences). It returns nil when the PVC has all of that.
func ReownPVC(pvc *corev1.PersistentVolumeClaim, m *etcdv1alpha2.EtcdMember, c *etcdv1alpha2.EtcdCluster) *corev1.PersistentVolumeClaim {
	want := pvc.DeepCopy()
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	maps.Copy(want.Labels, desired.MemberPVCLabels(m))
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[etcdv1alpha2.AnnotationMemberUID] = string(m.UID)
	want.OwnerReferences = desired.PVCOwnerReferences(withoutLegacyControllers(pvc.OwnerReferences), c)
	if len(want.OwnerReferences) == 0 {
		want.OwnerReferences = nil
	}
	if equality.Semantic.DeepEqual(want.ObjectMeta, pvc.ObjectMeta) {
		return nil
	}
	return want
}

// IsLegacyService says whether svc carries the legacy selector of cluster: step 7 deletes a
// Service <c> only when it is the legacy client Service, never the native one nor a stranger.
func IsLegacyService(svc *corev1.Service, cluster string) bool {
	for k, v := range legacy.Selector(cluster) {
		if svc.Spec.Selector[k] != v {
			return false
		}
	}
	return true
}
