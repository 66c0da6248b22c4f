package etcdmember

import (
	"context"
	"encoding/json"
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
)

// Event reasons of the member controller's actions (behaviour.md §23 where a reason fits).
const (
	// EventPodCreated: the member's first Pod was created.
	EventPodCreated = "PodCreated"
	// EventPodRecreated: a Pod was created for a member that had one before (deleted, evicted,
	// failed, or woken from dormancy), with the same identity and data.
	EventPodRecreated = "PodRecreated"
	// EventPodDeleted: the member's Pod was deleted (dormant, or Failed and about to be
	// recreated).
	EventPodDeleted = "PodDeleted"
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
// member's additionalMetadata on it in place. Memory members have no PVC.
func (r *Reconciler) ensurePVC(ctx context.Context, sc *scope) (stepResult, error) {
	m := sc.member
	if m.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		return proceed, nil
	}
	name := desired.PVCName(m.Name)
	switch {
	case sc.pvc != nil && !sc.pvcOwned:
		msg := fmt.Sprintf("PVC %s belongs to %s, not to this member (UID %s); the operator neither adopts nor deletes it",
			name, describePVCOwner(sc.pvc, m), m.UID)
		sc.notes.conflict = msg
		r.conflictEvent(ctx, sc, msg)
		return stepResult{stop: true, reason: "foreign PVC"}, nil
	case sc.pvc != nil:
		if !sc.pvc.DeletionTimestamp.IsZero() {
			sc.notes.podBlocked = fmt.Sprintf("PVC %s is being deleted", name)
			return stepResult{stop: true, reason: "PVC terminating"}, nil
		}
		return proceed, r.patchMetadata(ctx, sc.pvc, desired.MemberPVCLabels(m), desired.AdditionalAnnotations(m), nil)
	}

	// No PVC. Its ownership follows the parent's reclaimPolicy, so the parent must be known;
	// and a cluster being deleted gets no new objects.
	switch sc.parentState {
	case parentUnreadable:
		sc.notes.podBlocked = "the parent EtcdCluster could not be read"
		return stepResult{}, sc.parentErr
	case parentGone, parentDeleting:
		sc.notes.podBlocked = "the parent EtcdCluster is " + sc.parentState.String()
		return stepResult{stop: true, reason: "parent " + sc.parentState.String()}, nil
	}
	pvc := desired.PVC(m, sc.parent)
	if err := r.client.Create(ctx, pvc); err != nil {
		return stepResult{}, fmt.Errorf("creating PVC %s: %w", name, err)
	}
	logf.FromContext(ctx).Info("Created PVC", "pvc", name)
	r.event(sc, corev1.EventTypeNormal, EventPVCCreated, actionCreate, "Created PVC %s for member %s", name, m.Name)
	sc.pvc, sc.pvcOwned = pvc, true
	return proceed, nil
}

// ensurePod makes the member's Pod match its lifecycle: none while dormant or while
// initialCluster is empty, one otherwise. It never touches a Pod the member does not control.
func (r *Reconciler) ensurePod(ctx context.Context, sc *scope) (stepResult, error) {
	m := sc.member
	pod := sc.pod
	if pod != nil && !sc.podOwned {
		msg := fmt.Sprintf("Pod %s is controlled by %s, not by this member (UID %s); the operator neither adopts nor deletes it",
			pod.Name, describeController(pod), m.UID)
		sc.notes.conflict = msg
		r.conflictEvent(ctx, sc, msg)
		return stepResult{stop: true, reason: "foreign Pod"}, nil
	}

	if pod != nil {
		switch {
		case !pod.DeletionTimestamp.IsZero():
			// Terminating: its deletion event brings us back.
			return stepResult{stop: true, reason: "Pod terminating"}, nil
		case m.Spec.Dormant:
			return r.deletePod(ctx, sc, "member is dormant: Pod deleted, PVC "+desired.PVCName(m.Name)+" and member identity kept")
		case pod.Status.Phase == corev1.PodFailed && m.Spec.Storage.Medium != etcdv1alpha2.StorageMediumMemory:
			// Evicted or shut down with its node: the data is on the PVC, so a new Pod with the
			// same identity picks up where it stopped (behaviour.md §9). A Memory member's
			// Failed Pod is left for the EtcdCluster controller to replace.
			return r.deletePod(ctx, sc, "Pod failed ("+pod.Status.Reason+"); it is recreated from PVC "+desired.PVCName(m.Name))
		}
		return proceed, r.patchMetadata(ctx, pod, desired.MemberPodLabels(m), desired.AdditionalAnnotations(m), podRemovableLabels(m))
	}

	if m.Spec.Dormant || m.Spec.InitialCluster == "" {
		return proceed, nil
	}
	if m.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory && m.Status.PodUID != "" {
		// The member ran before and its tmpfs data went with its Pod. Starting a new, empty
		// process under the old identity could let it vote without the log it acknowledged;
		// the EtcdCluster controller replaces the member instead (behaviour.md §9).
		sc.notes.memoryPodLost = true
		return proceed, nil
	}
	return r.createPod(ctx, sc)
}

// createPod builds and creates the member's Pod. It fails closed: without a readable parent the
// initial cluster state is unknown, and without the TLS Secrets the template hash is unknown, so
// no Pod is built.
func (r *Reconciler) createPod(ctx context.Context, sc *scope) (stepResult, error) {
	m := sc.member
	switch sc.parentState {
	case parentGone, parentDeleting:
		sc.notes.podBlocked = "the parent EtcdCluster is " + sc.parentState.String()
		return stepResult{stop: true, reason: "parent " + sc.parentState.String()}, nil
	}
	var clusterID string
	if sc.parent != nil {
		clusterID = sc.parent.Status.ClusterID
	}
	state, err := desired.InitialClusterState(m, clusterID, sc.parentState != parentUnreadable)
	if err != nil {
		sc.notes.podBlocked = "the parent EtcdCluster could not be read, so the initial cluster state is unknown"
		return stepResult{}, errors.Join(err, sc.parentErr)
	}
	if m.Spec.Storage.Medium != etcdv1alpha2.StorageMediumMemory && !sc.pvcOwned {
		sc.notes.podBlocked = "PVC " + desired.PVCName(m.Name) + " does not exist yet"
		return stepResult{stop: true, reason: "no PVC"}, nil
	}
	ca, missing, err := r.caDigests(ctx, m)
	if err != nil {
		return stepResult{}, err
	}
	if missing != "" {
		sc.notes.podBlocked = "TLS Secret " + missing + " does not exist"
		return stepResult{requeueAfter: secretWait, reason: "TLS Secret missing"}, nil
	}

	pod := desired.Pod(m, desired.Inputs{ImageRepository: r.imageRepository, State: state, CADigests: ca})
	if err := r.client.Create(ctx, pod); err != nil {
		return stepResult{}, fmt.Errorf("creating Pod %s: %w", pod.Name, err)
	}
	sc.pod, sc.podOwned = pod, true
	reason, verb := EventPodCreated, "Created"
	if m.Status.PodUID != "" {
		reason, verb = EventPodRecreated, "Recreated"
	}
	logf.FromContext(ctx).Info(verb+" Pod", "pod", pod.Name, "initialClusterState", state)
	r.event(sc, corev1.EventTypeNormal, reason, actionCreate, "%s Pod %s for member %s (initial cluster state %s)", verb, pod.Name, m.Name, state)
	return proceed, nil
}

// deletePod deletes the member's Pod gracefully, preconditioned on its UID so that a Pod
// replaced in the meantime is never deleted by mistake.
func (r *Reconciler) deletePod(ctx context.Context, sc *scope, why string) (stepResult, error) {
	pod := sc.pod
	err := r.client.Delete(ctx, pod, client.Preconditions{UID: ptr.To(pod.UID)})
	if client.IgnoreNotFound(err) != nil {
		return stepResult{}, fmt.Errorf("deleting Pod %s: %w", pod.Name, err)
	}
	logf.FromContext(ctx).Info("Deleted Pod", "pod", pod.Name, "reason", why)
	r.event(sc, corev1.EventTypeNormal, EventPodDeleted, actionDelete, "Deleted Pod %s of member %s: %s", pod.Name, sc.member.Name, why)
	sc.pod = nil
	return stepResult{stop: true, reason: "Pod deleted"}, nil
}

// podRemovableLabels are operator labels that must disappear from the Pod when the member no
// longer qualifies for them: role=voter from a member that is not (or no longer) a voter.
func podRemovableLabels(m *etcdv1alpha2.EtcdMember) []string {
	if m.Status.IsVoter {
		return nil
	}
	return []string{etcdv1alpha2.LabelRole}
}

// metadataPatch returns the merge patch that sets labels and annotations on obj and removes the
// labels in remove, or nil when obj already matches. Keys obj has but the maps do not are left
// alone: they may belong to other controllers or to people.
func metadataPatch(obj metav1.Object, labels, annotations map[string]string, remove []string) map[string]any {
	l := map[string]any{}
	for k, v := range labels {
		if cur, ok := obj.GetLabels()[k]; !ok || cur != v {
			l[k] = v
		}
	}
	for _, k := range remove {
		if _, ok := obj.GetLabels()[k]; ok {
			if _, keep := labels[k]; !keep {
				l[k] = nil
			}
		}
	}
	a := map[string]any{}
	for k, v := range annotations {
		if cur, ok := obj.GetAnnotations()[k]; !ok || cur != v {
			a[k] = v
		}
	}
	if len(l) == 0 && len(a) == 0 {
		return nil
	}
	md := map[string]any{}
	if len(l) > 0 {
		md["labels"] = l
	}
	if len(a) > 0 {
		md["annotations"] = a
	}
	return map[string]any{"metadata": md}
}

// patchMetadata applies metadataPatch to obj, preconditioned on its UID, and writes nothing when
// there is nothing to change.
func (r *Reconciler) patchMetadata(ctx context.Context, obj client.Object, labels, annotations map[string]string, remove []string) error {
	p := metadataPatch(obj, labels, annotations, remove)
	if p == nil {
		return nil
	}
	p["metadata"].(map[string]any)["uid"] = string(obj.GetUID())
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding a metadata patch: %w", err)
	}
	if err := r.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("updating labels and annotations of %s: %w", obj.GetName(), err)
	}
	return nil
}

// caDigests reads the CA bundles of the TLS Secrets the member mounts (uncached, by name). It
// returns the name of the first missing Secret instead of an error: that is a wait, not a
// failure.
func (r *Reconciler) caDigests(ctx context.Context, m *etcdv1alpha2.EtcdMember) (desired.CADigests, string, error) {
	var ca desired.CADigests
	t := m.Spec.TLS
	if t == nil {
		return ca, "", nil
	}
	read := func(ref *corev1.LocalObjectReference) (string, bool, error) {
		if ref == nil {
			return "", true, nil
		}
		s := &corev1.Secret{}
		err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: ref.Name}, s)
		switch {
		case apierrors.IsNotFound(err):
			return "", false, nil
		case err != nil:
			return "", false, fmt.Errorf("reading TLS Secret %s: %w", ref.Name, err)
		}
		return desired.CADigest(s.Data[desired.CACertKey]), true, nil
	}
	var ok bool
	var err error
	if ca.Client, ok, err = read(t.ClientServerSecretRef); err != nil || !ok {
		return ca, t.ClientServerSecretRef.Name, err
	}
	if ca.Peer, ok, err = read(t.PeerSecretRef); err != nil || !ok {
		return ca, t.PeerSecretRef.Name, err
	}
	return ca, "", nil
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
