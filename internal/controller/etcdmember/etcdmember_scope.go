package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// parentState is what the member knows about its EtcdCluster.
type parentState int

const (
	// parentPresent: the cluster exists and is not being deleted.
	parentPresent parentState = iota
	// parentDeleting: the cluster has a deletion timestamp.
	parentDeleting
	// parentGone: no cluster of that name, or one with another UID than the member's owner
	// (a new cluster reusing the name is not this member's parent).
	parentGone
	// parentUnreadable: reading the cluster failed; nothing that depends on it may be decided.
	parentUnreadable
)

func (p parentState) String() string {
	switch p {
	case parentPresent:
		return "present"
	case parentDeleting:
		return "deleting"
	case parentGone:
		return "gone"
	default:
		return "unreadable"
	}
}

// scope is what one pass observed, gathered once before any step runs. Steps read it and record
// what they did in its notes; nothing in it is re-read during the pass.
type scope struct {
	// member is the EtcdMember as fetched. Steps change only its metadata (the finalizer).
	member *etcdv1alpha2.EtcdMember
	// original is a copy of member as fetched, the base of the status patch.
	original *etcdv1alpha2.EtcdMember

	parent      *etcdv1alpha2.EtcdCluster
	parentState parentState
	parentErr   error

	// pod is the Pod named after the member, nil when there is none; podOwned says it is
	// controlled by this member (by UID). A Pod that is not is never adopted, changed or
	// deleted.
	pod      *corev1.Pod
	podOwned bool
	// pvc is the PVC data-<member>, nil when there is none; pvcOwned says it belongs to this
	// member (member-uid annotation and no foreign controller).
	pvc      *corev1.PersistentVolumeClaim
	pvcOwned bool

	notes notes
}

// notes are what the steps of a pass found or did, for the status computation.
type notes struct {
	// podBlocked says why no Pod could be built this pass (parent unreadable, TLS Secret
	// missing, foreign PVC...); empty when nothing blocked it.
	podBlocked string
	// conflict says which object named like the member belongs to someone else.
	conflict string
	// memoryPodLost is set for a Memory member whose Pod is gone: its data is lost and the
	// EtcdCluster controller must replace it; the Pod is never recreated.
	memoryPodLost bool
	// desiredHash is the template hash a Pod built now would carry, when it was computed.
	desiredHash string
	// restartHeld says why a Pod whose template differs from the authorised one is not
	// restarted yet; empty when nothing holds it.
	restartHeld string
	// deletion is the finalizer decision of a member being deleted.
	deletion *releaseDecision
	// released is set when the finalizer was removed: the object may be gone, so status is
	// not written.
	released bool
}

// buildScope gathers the member's parent, Pod and PVC.
func (r *Reconciler) buildScope(ctx context.Context, member *etcdv1alpha2.EtcdMember) (*scope, error) {
	sc := &scope{member: member, original: member.DeepCopy()}

	parent := &etcdv1alpha2.EtcdCluster{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: member.Namespace, Name: member.Spec.ClusterName}, parent)
	switch {
	case apierrors.IsNotFound(err):
		sc.parentState = parentGone
	case err != nil:
		sc.parentState, sc.parentErr = parentUnreadable, fmt.Errorf("reading EtcdCluster %s: %w", member.Spec.ClusterName, err)
	default:
		sc.parent = parent
		sc.parentState = classifyParent(member, parent)
		if sc.parentState == parentGone {
			sc.parent = nil
		}
	}

	pod := &corev1.Pod{}
	switch err := r.client.Get(ctx, types.NamespacedName{Namespace: member.Namespace, Name: member.Name}, pod); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading Pod %s: %w", member.Name, err)
	default:
		sc.pod, sc.podOwned = pod, podOwnedBy(pod, member)
	}

	if member.Spec.Storage.Medium != etcdv1alpha2.StorageMediumMemory {
		pvc := &corev1.PersistentVolumeClaim{}
		switch err := r.client.Get(ctx, types.NamespacedName{Namespace: member.Namespace, Name: desired.PVCName(member.Name)}, pvc); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading PVC %s: %w", desired.PVCName(member.Name), err)
		default:
			sc.pvc, sc.pvcOwned = pvc, pvcOwnedBy(pvc, member)
		}
	}
	return sc, nil
}

// classifyParent tells a present parent from a deleting one, and from a namesake: when the
// member is controlled by an EtcdCluster whose UID differs from the one found, its own parent is
// gone.
func classifyParent(member *etcdv1alpha2.EtcdMember, parent *etcdv1alpha2.EtcdCluster) parentState {
	if ref := metav1.GetControllerOf(member); ref != nil && ref.Kind == "EtcdCluster" && ref.UID != parent.UID {
		return parentGone
	}
	if !parent.DeletionTimestamp.IsZero() {
		return parentDeleting
	}
	return parentPresent
}

// podOwnedBy reports whether pod is controlled by member, by UID: a Pod named like the member
// but controlled by something else (or by a previous member of the same name) is not ours.
func podOwnedBy(pod *corev1.Pod, member *etcdv1alpha2.EtcdMember) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.UID == member.UID
}

// pvcOwnedBy reports whether pvc belongs to member: its member-uid annotation names the member's
// UID, and its controller, if any, is the member's EtcdCluster. PVCs are deliberately not owned
// by the EtcdMember (docs/design/healing.md, "PVC lifetime"), so the annotation is the
// identity.
func pvcOwnedBy(pvc *corev1.PersistentVolumeClaim, member *etcdv1alpha2.EtcdMember) bool {
	if pvc.Annotations[etcdv1alpha2.AnnotationMemberUID] != string(member.UID) {
		return false
	}
	ref := metav1.GetControllerOf(pvc)
	if ref == nil {
		return true
	}
	owner := metav1.GetControllerOf(member)
	return ref.Kind == "EtcdCluster" && owner != nil && ref.UID == owner.UID
}

// predecessorPVC reports whether pvc, not the member's own, was left by an earlier EtcdMember of
// the same name in the same cluster (labels, member-uid of another UID, no controller but the
// member's cluster), and the member was created under that name explicitly. That is how a deleted
// member comes back: the EtcdCluster controller re-creates it and rewrites the PVC's member-uid
// right after (docs/design/membership-flows.md, "Re-adoption of orphan PVCs"), so the member waits
// for that instead of refusing the data. A member named by GenerateName never comes back for old
// data.
func predecessorPVC(pvc *corev1.PersistentVolumeClaim, member *etcdv1alpha2.EtcdMember) bool {
	uid := pvc.Annotations[etcdv1alpha2.AnnotationMemberUID]
	if member.GenerateName != "" || uid == "" || uid == string(member.UID) || pvc.Labels[etcdv1alpha2.LabelComponent] != member.Name ||
		pvc.Labels[etcdv1alpha2.LabelCluster] != member.Spec.ClusterName {
		return false
	}
	ref := metav1.GetControllerOf(pvc)
	if ref == nil {
		return true
	}
	owner := metav1.GetControllerOf(member)
	return ref.Kind == "EtcdCluster" && owner != nil && ref.UID == owner.UID
}

// predecessorPod reports whether pod is controlled by an earlier EtcdMember of the same name:
// names are unique, so that member is gone and the garbage collector deletes its Pod. The
// member waits for that; it never deletes a Pod it does not control.
func predecessorPod(pod *corev1.Pod, member *etcdv1alpha2.EtcdMember) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "EtcdMember" && ref.Name == member.Name && ref.UID != member.UID &&
		pod.Labels[etcdv1alpha2.LabelCluster] == member.Spec.ClusterName
}
