package etcdmember

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// Event reasons of the member controller's actions, from docs/design/conditions-and-events.md,
// "Events", where a reason there fits.
const (
	// EventPodCreated: the member's first Pod was created.
	EventPodCreated = "PodCreated"
	// EventPodRecreated: a Pod was created for a member that had one before (deleted, evicted,
	// failed, or woken from dormancy), with the same identity and data.
	EventPodRecreated = "PodRecreated"
	// EventPodDeleted: the member's Pod was deleted (dormant, or Failed and about to be
	// recreated).
	EventPodDeleted = "PodDeleted"
	// EventPodCreateRefused: the API server refused to create the member's Pod (an admission
	// policy or webhook, a ResourceQuota, a missing PriorityClass); retried every createRetry.
	EventPodCreateRefused = "PodCreateRefused"
	// EventPVCCreated: the member's data PVC was created.
	EventPVCCreated = "PVCCreated"
	// EventOwnershipConflict: a Pod or PVC named like the member belongs to someone else; the
	// operator leaves it alone and the member cannot run until it is removed.
	EventOwnershipConflict = "OwnershipConflict"
	// EventMemberDeletionBlocked: a deletion nobody in the operator initiated is held by the
	// member-cleanup finalizer.
	EventMemberDeletionBlocked = "MemberDeletionBlocked"
)

// Event actions (the events.k8s.io "action" field).
const (
	actionCreate = "Create"
	actionDelete = "Delete"
	actionRefuse = "Refuse"
	actionHold   = "HoldDeletion"
)

// ensurePVC creates the member's data PVC when it has none, refuses a foreign one, and keeps the
// cluster's reclaim policy and the member's additionalMetadata on it in place. Memory members have no PVC.
func (r *Reconciler) ensurePVC(ctx context.Context, sc *scope) (step.Result, error) {
	m := sc.member
	if m.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		return step.Continue, nil
	}
	name := desired.PVCName(m.Name)
	switch {
	case sc.pvc != nil && !sc.pvcOwned && predecessorPVC(sc.pvc, m):
		sc.notes.podBlocked = readoptWait(sc.pvc)
		return step.Stop("PVC awaiting re-adoption"), nil
	case sc.pvc != nil && !sc.pvcOwned:
		msg := pvcConflict(sc.pvc, m)
		sc.notes.conflict = msg
		r.conflictEvent(ctx, sc, msg)
		return step.Stop("foreign PVC"), nil
	case sc.pvc != nil:
		if !sc.pvc.DeletionTimestamp.IsZero() {
			sc.notes.podBlocked = fmt.Sprintf("PVC %s is being deleted", name)
			return step.Stop("PVC terminating"), nil
		}
		if err := r.keepReclaimPolicy(ctx, sc); err != nil {
			return step.Result{}, err
		}
		return step.Continue, r.keepMetadata(ctx, sc.pvc, pvcGVK, desired.MemberLabels(m.Spec.ClusterName, m.Name), nil, m)
	}

	// No PVC. Its ownership follows the parent's reclaimPolicy, so the parent must be known;
	// and a cluster being deleted gets no new objects.
	switch sc.parentState {
	case parentUnreadable:
		sc.notes.podBlocked = "the parent EtcdCluster could not be read"
		return step.Result{}, sc.parentErr
	case parentGone, parentDeleting:
		sc.notes.podBlocked = "the parent EtcdCluster is " + sc.parentState.String()
		return step.Stop("parent " + sc.parentState.String()), nil
	}
	// Created with the operator's metadata only; additionalMetadata is applied next under its
	// own field manager, so that keys later dropped from the spec can be removed again.
	pvc := desired.PVC(m, sc.parent)
	pvc.Labels = desired.MemberLabels(m.Spec.ClusterName, m.Name)
	pvc.Annotations = map[string]string{etcdv1alpha2.AnnotationMemberUID: string(m.UID)}
	if err := r.client.Create(ctx, pvc); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return r.nameTaken(ctx, sc, &corev1.PersistentVolumeClaim{}, name)
		}
		return step.Result{}, fmt.Errorf("creating PVC %s: %w", name, err)
	}
	logf.FromContext(ctx).Info("Created PVC", "pvc", name)
	r.event(sc, corev1.EventTypeNormal, EventPVCCreated, actionCreate, "Created PVC %s for member %s", name, m.Name)
	sc.pvc, sc.pvcOwned = pvc, true
	return step.Continue, r.applyAdditionalMetadata(ctx, pvc, pvcGVK, m)
}

// ensurePod makes the member's Pod match its lifecycle: none while dormant or while
// initialCluster is empty, one otherwise. It never touches a Pod the member does not control.
func (r *Reconciler) ensurePod(ctx context.Context, sc *scope) (step.Result, error) {
	m := sc.member
	pod := sc.pod
	if pod != nil && !sc.podOwned && predecessorPod(pod, m) {
		sc.notes.podBlocked = fmt.Sprintf("Pod %s belongs to an earlier EtcdMember %s (UID %s); waiting for the garbage collector to delete it",
			pod.Name, m.Name, metav1.GetControllerOf(pod).UID)
		return step.Stop("predecessor's Pod"), nil
	}
	if pod != nil && !sc.podOwned {
		msg := podConflict(pod, m)
		sc.notes.conflict = msg
		r.conflictEvent(ctx, sc, msg)
		return step.Stop("foreign Pod"), nil
	}

	if pod != nil {
		switch {
		case !pod.DeletionTimestamp.IsZero():
			// Terminating: its deletion event brings us back.
			return step.Stop("Pod terminating"), nil
		case m.Spec.Dormant:
			return r.deletePod(ctx, sc, "member is dormant: Pod deleted, PVC "+desired.PVCName(m.Name)+" and member identity kept")
		case pod.Status.Phase == corev1.PodFailed && m.Spec.Storage.Medium != etcdv1alpha2.StorageMediumMemory:
			// Evicted or shut down with its node: the data is on the PVC, so a new Pod with the
			// same identity picks up where it stopped (docs/design/healing.md, "Classification",
			// podFailed). A Memory member's Failed Pod is left for the EtcdCluster controller to
			// replace.
			return r.deletePod(ctx, sc, "Pod failed ("+pod.Status.Reason+"); it is recreated from PVC "+desired.PVCName(m.Name))
		}
		if d, err := r.templateRestart(ctx, sc); err != nil || d.restart {
			if err != nil {
				return step.Result{}, err
			}
			return r.deletePod(ctx, sc, d.why)
		}
		return step.Continue, r.keepMetadata(ctx, pod, podGVK, desired.OperatorPodLabels(m), podRemovableLabels(m), m)
	}

	if m.Spec.Dormant || m.Spec.InitialCluster == "" {
		return step.Continue, nil
	}
	if m.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory && m.Status.PodUID != "" {
		// The member ran before and its tmpfs data went with its Pod. Starting a new, empty
		// process under the old identity could let it vote without the log it acknowledged;
		// the EtcdCluster controller replaces the member instead (docs/design/healing.md,
		// "Replacement").
		sc.notes.memoryPodLost = true
		return step.Continue, nil
	}
	return r.createPod(ctx, sc)
}

// createPod builds and creates the member's Pod. It fails closed: without a readable parent the
// initial cluster state is unknown, and without the TLS Secrets the template hash is unknown, so
// no Pod is built.
func (r *Reconciler) createPod(ctx context.Context, sc *scope) (step.Result, error) {
	m := sc.member
	switch sc.parentState {
	case parentGone, parentDeleting:
		sc.notes.podBlocked = "the parent EtcdCluster is " + sc.parentState.String()
		return step.Stop("parent " + sc.parentState.String()), nil
	}
	var clusterID string
	if sc.parent != nil {
		clusterID = sc.parent.Status.ClusterID
	}
	state, err := desired.InitialClusterState(m, clusterID, sc.parentState != parentUnreadable)
	if err != nil {
		sc.notes.podBlocked = "the parent EtcdCluster could not be read, so the initial cluster state is unknown"
		return step.Result{}, errors.Join(err, sc.parentErr)
	}
	if desired.Restores(m, desired.Inputs{State: state}) && r.guardImage == "" {
		// The restore agent comes from the operator's image; a seed started without it would
		// found an empty cluster instead of the snapshot's. Only an operator restart changes
		// the image, so there is nothing to requeue for.
		sc.notes.podBlocked = "restoring the seed from a snapshot needs the operator's own image, which holds the restore agent: " +
			"run the operator in a Pod, or set --data-guard-image"
		return step.Stop("restore without the operator's image"), nil
	}
	if m.Spec.Storage.Medium != etcdv1alpha2.StorageMediumMemory && !sc.pvcOwned {
		sc.notes.podBlocked = "PVC " + desired.PVCName(m.Name) + " does not exist yet"
		return step.Stop("no PVC"), nil
	}
	ca, missing, err := r.caDigests(ctx, m)
	if err != nil {
		return step.Result{}, err
	}
	if missing != "" {
		sc.notes.podBlocked = "TLS Secret " + missing + " does not exist"
		return step.Requeue(secretWait, "TLS Secret missing"), nil
	}

	pod := desired.Pod(m, desired.Inputs{ImageRepository: r.imageRepository, State: state, CADigests: ca, GuardImage: r.guardImage})
	// As for the PVC: the operator's metadata at creation, additionalMetadata applied next.
	pod.Labels = desired.OperatorPodLabels(m)
	pod.Annotations = map[string]string{etcdv1alpha2.AnnotationTemplateHash: pod.Annotations[etcdv1alpha2.AnnotationTemplateHash]}
	if err := r.client.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return r.nameTaken(ctx, sc, &corev1.Pod{}, pod.Name)
		}
		if refusedCreate(err) {
			// A refusal lifts without any event this controller watches (a policy deleted, a
			// quota raised), so the member retries on a fixed interval: an error would be
			// retried on the work queue's exponential back-off, which grows with the length of
			// the outage it prolongs (docs/e2e-lifecycle.md, finding 7).
			sc.notes.podBlocked = "creating Pod " + pod.Name + " was refused: " + apiMessage(err) + "; retrying every " + createRetry.String()
			r.event(sc, corev1.EventTypeWarning, EventPodCreateRefused, actionCreate, "Creating Pod %s for member %s was refused: %s", pod.Name, m.Name, apiMessage(err))
			return step.Requeue(createRetry, "Pod create refused"), nil
		}
		return step.Result{}, fmt.Errorf("creating Pod %s: %w", pod.Name, err)
	}
	sc.pod, sc.podOwned = pod, true
	reason, verb := EventPodCreated, "Created"
	if m.Status.PodUID != "" {
		reason, verb = EventPodRecreated, "Recreated"
	}
	logf.FromContext(ctx).Info(verb+" Pod", "pod", pod.Name, "initialClusterState", state)
	r.event(sc, corev1.EventTypeNormal, reason, actionCreate, "%s Pod %s for member %s (initial cluster state %s)", verb, pod.Name, m.Name, state)
	return step.Continue, r.applyAdditionalMetadata(ctx, pod, podGVK, m)
}

// nameTaken handles a create refused with AlreadyExists although the cache showed no object of
// that name. Read live, the object is either the member's own (the cache lags: look again
// shortly) or someone else's that the cache does not show, for instance because it is filtered
// by labels: that one is refused like any foreign object, without retrying in a hot loop.
func (r *Reconciler) nameTaken(ctx context.Context, sc *scope, obj client.Object, name string) (step.Result, error) {
	m := sc.member
	err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return step.Requeue(conflictRetry, "name freed meanwhile"), nil
	case err != nil:
		return step.Result{}, fmt.Errorf("reading %s: %w", name, err)
	}
	var msg string
	switch o := obj.(type) {
	case *corev1.Pod:
		if podOwnedBy(o, m) {
			return step.Requeue(conflictRetry, "cache lags"), nil
		}
		if predecessorPod(o, m) {
			sc.notes.podBlocked = "Pod " + o.Name + " belongs to an earlier EtcdMember of this name; waiting for the garbage collector to delete it"
			return step.Stop("predecessor's Pod"), nil
		}
		msg = podConflict(o, m)
	case *corev1.PersistentVolumeClaim:
		if pvcOwnedBy(o, m) {
			return step.Requeue(conflictRetry, "cache lags"), nil
		}
		if predecessorPVC(o, m) {
			sc.notes.podBlocked = readoptWait(o)
			return step.Stop("PVC awaiting re-adoption"), nil
		}
		msg = pvcConflict(o, m)
	}
	sc.notes.conflict = msg
	r.conflictEvent(ctx, sc, msg)
	return step.Stop("name taken by a foreign object"), nil
}

// deletePod deletes the member's Pod, gracefully unless opts say otherwise, preconditioned on
// its UID so that a Pod replaced in the meantime is never deleted by mistake.
func (r *Reconciler) deletePod(ctx context.Context, sc *scope, why string, opts ...client.DeleteOption) (step.Result, error) {
	pod := sc.pod
	err := r.client.Delete(ctx, pod, append([]client.DeleteOption{client.Preconditions{UID: ptr.To(pod.UID)}}, opts...)...)
	if client.IgnoreNotFound(err) != nil {
		return step.Result{}, fmt.Errorf("deleting Pod %s: %w", pod.Name, err)
	}
	logf.FromContext(ctx).Info("Deleted Pod", "pod", pod.Name, "reason", why)
	r.event(sc, corev1.EventTypeNormal, EventPodDeleted, actionDelete, "Deleted Pod %s of member %s: %s", pod.Name, sc.member.Name, why)
	sc.pod = nil
	return step.Stop("Pod deleted"), nil
}

// caDigests reads the CA bundles of the TLS Secrets the member mounts (etcdaccess.CADigests).
func (r *Reconciler) caDigests(ctx context.Context, m *etcdv1alpha2.EtcdMember) (desired.CADigests, string, error) {
	return etcdaccess.CADigests(ctx, r.apiReader, m.Namespace, m.Spec.TLS)
}

// conflictEvent records an ownership conflict once: when the member's Ready condition does not
// already report it.
func (r *Reconciler) conflictEvent(ctx context.Context, sc *scope, msg string) {
	if cur := readyConditionOf(sc.original); cur != nil && cur.Message == msg {
		return
	}
	logf.FromContext(ctx).Info("Refusing a foreign object", "reason", msg)
	r.event(sc, corev1.EventTypeWarning, EventOwnershipConflict, actionRefuse, "%s", msg)
}

// readoptWait says why a re-created member has no Pod yet: its PVC still names its predecessor.
func readoptWait(pvc *corev1.PersistentVolumeClaim) string {
	return fmt.Sprintf("PVC %s still belongs to an earlier EtcdMember of this name (UID %s); waiting for the EtcdCluster controller to re-adopt it",
		pvc.Name, pvc.Annotations[etcdv1alpha2.AnnotationMemberUID])
}

// podConflict is the message of a Pod named like the member that the member does not control.
func podConflict(pod *corev1.Pod, m *etcdv1alpha2.EtcdMember) string {
	return fmt.Sprintf("Pod %s is controlled by %s, not by this member (UID %s); the operator neither adopts nor deletes it",
		pod.Name, describeController(pod), m.UID)
}

// pvcConflict is the message of a PVC named like the member's that belongs to someone else.
func pvcConflict(pvc *corev1.PersistentVolumeClaim, m *etcdv1alpha2.EtcdMember) string {
	return fmt.Sprintf("PVC %s belongs to %s, not to this member (UID %s); the operator neither adopts nor deletes it",
		pvc.Name, describePVCOwner(pvc, m), m.UID)
}

// describeController names obj's controller for a message.
func describeController(obj metav1.Object) string {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return fmt.Sprintf("%s %s (UID %s)", ref.Kind, ref.Name, ref.UID)
	}
	return "no controller"
}

// describePVCOwner names whom a foreign PVC belongs to.
func describePVCOwner(pvc *corev1.PersistentVolumeClaim, m *etcdv1alpha2.EtcdMember) string {
	uid := pvc.Annotations[etcdv1alpha2.AnnotationMemberUID]
	switch {
	case uid == "":
		return "nobody known (no member-uid annotation)"
	case uid != string(m.UID):
		return "member UID " + uid
	default:
		return describeController(pvc)
	}
}

// refusedCreate reports whether the API server refused a create on its merits (admission,
// quota, validation) rather than failing to process it: such a refusal stays until someone
// changes the policy, the quota or the object's dependencies.
func refusedCreate(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// apiMessage is the API server's own explanation of err, which names the policy, quota or
// field at fault.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
