package adopt

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// reown is step 6: each Pod gets this project's labels, its template hash and its member as
// controller; each PVC its member's labels, member-uid and the cluster as owner. Metadata only:
// nothing restarts. Patches carry the resourceVersion, so a concurrent change (the garbage
// collector finishing an orphan deletion) fails the step instead of being overwritten.
func (a *Adopter) reown(ctx context.Context, c *etcdv1alpha2.EtcdCluster, members []etcdv1alpha2.EtcdMember) error {
	for i := range members {
		m := &members[i]
		pod := &corev1.Pod{}
		if err := a.Kube.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Status.PodName}, pod); err != nil {
			return fmt.Errorf("reading Pod %s: %w", m.Status.PodName, err)
		}
		if want := ReownPod(pod, m); want != nil {
			if err := a.Kube.Patch(ctx, want, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("re-owning Pod %s: %w", pod.Name, err)
			}
			a.logf("re-owned Pod %s/%s", pod.Namespace, pod.Name)
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := a.Kube.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Status.PVCName}, pvc); err != nil {
			return fmt.Errorf("reading PVC %s: %w", m.Status.PVCName, err)
		}
		if want := ReownPVC(pvc, m, c); want != nil {
			if err := a.Kube.Patch(ctx, want, client.MergeFromWithOptions(pvc, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("re-owning PVC %s: %w", pvc.Name, err)
			}
			a.logf("re-owned PVC %s/%s", pvc.Namespace, pvc.Name)
		}
	}
	return nil
}
