package legacyfixture

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// ExpectedPods are the Pods the StatefulSet controller creates for s, Running and Ready, with
// deterministic UIDs (pod-uid-<ordinal>): the StatefulSet's template with the pod name, its
// hostname and subdomain, its ownerReference and the per-Pod claim in place of the template's.
func (s *Set) ExpectedPods() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, s.Options.Replicas)
	for i := range int(s.Options.Replicas) {
		name := legacy.PodName(s.Options.Name, i)
		tmpl := s.StatefulSet.Spec.Template.DeepCopy()
		p := &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: s.Options.Namespace, UID: types.UID("pod-uid-" + name),
				Labels: tmpl.Labels, Annotations: tmpl.Annotations,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: s.StatefulSet.Name,
					UID: types.UID("sts-uid-" + s.StatefulSet.Name), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			},
			Spec: tmpl.Spec,
		}
		p.Labels["statefulset.kubernetes.io/pod-name"] = name
		p.Spec.Hostname, p.Spec.Subdomain = name, s.StatefulSet.Spec.ServiceName
		for j := range p.Spec.Volumes {
			if pvc := p.Spec.Volumes[j].PersistentVolumeClaim; pvc != nil && pvc.ClaimName == legacy.ClaimTemplateName {
				pvc.ClaimName = legacy.PVCName(name)
			}
		}
		p.Status = corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: legacy.ContainerName, Ready: true, Image: p.Spec.Containers[0].Image}},
		}
		out = append(out, p)
	}
	return out
}

// ExpectedPVCs are the claims the StatefulSet controller creates from the claim template,
// Bound at their requested size; none for an emptyDir cluster.
func (s *Set) ExpectedPVCs() []*corev1.PersistentVolumeClaim {
	if len(s.StatefulSet.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	vct := s.StatefulSet.Spec.VolumeClaimTemplates[0]
	out := make([]*corev1.PersistentVolumeClaim, 0, s.Options.Replicas)
	for i := range int(s.Options.Replicas) {
		pod := legacy.PodName(s.Options.Name, i)
		c := &corev1.PersistentVolumeClaim{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{
				Name: legacy.PVCName(pod), Namespace: s.Options.Namespace, UID: types.UID("pvc-uid-" + pod),
				Labels: legacy.Selector(s.Options.Name),
			},
			Spec: *vct.Spec.DeepCopy(),
			Status: corev1.PersistentVolumeClaimStatus{
				Phase: corev1.ClaimBound, AccessModes: vct.Spec.AccessModes,
				Capacity: corev1.ResourceList{corev1.ResourceStorage: vct.Spec.Resources.Requests[corev1.ResourceStorage]},
			},
		}
		if c.Spec.StorageClassName == nil {
			// What the default StorageClass admission plugin fills in.
			c.Spec.StorageClassName = ptr.To("standard")
		}
		out = append(out, c)
	}
	return out
}
