package etcdmember

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// releaseDecision is what happens to the member-cleanup finalizer of a member being deleted.
type releaseDecision struct {
	// release removes the finalizer.
	release bool
	// needMembership says the decision depends on etcd's member list.
	needMembership bool
	// blocked marks a deletion nobody in the operator initiated: no removal-reason, no
	// allow-deletion. It needs a human.
	blocked bool
	// message explains the decision, for the Ready condition and the log.
	message string
}

// Messages of held deletions. MsgDeletionBlocked is the instruction a person reads.
const (
	MsgDeletionBlocked = "deletion blocked: the operator did not initiate it (no removal-reason annotation) and the member is still in etcd; " +
		"annotate the EtcdMember with " + etcdv1alpha2.AnnotationAllowDeletion + "=\"true\" to let the EtcdCluster controller remove it from etcd and replace it; " +
		"until then the member keeps running"
	msgWaitingForRemoval = "waiting for the EtcdCluster controller to remove the member from etcd"
)

// decideWithoutEtcd is the part of the finalizer decision that needs no etcd call
// (docs/design/membership-flows.md, "Cluster deletion"; docs/api.md, "Finalizer"): release when the
// parent cluster is gone or being deleted (the whole cluster goes, and calling MemberRemove on a
// cluster that is shutting down would deadlock the deletion), or when the member never joined (no
// member ID and no initialCluster). Otherwise the member list decides.
func decideWithoutEtcd(m *etcdv1alpha2.EtcdMember, parent parentState) releaseDecision {
	switch parent {
	case parentGone:
		return releaseDecision{release: true, message: "the parent EtcdCluster is gone"}
	case parentDeleting:
		return releaseDecision{release: true, message: "the parent EtcdCluster is being deleted"}
	}
	if m.Status.MemberID == "" && m.Spec.InitialCluster == "" {
		return releaseDecision{release: true, message: "the member never joined etcd"}
	}
	if parent == parentUnreadable {
		return releaseDecision{message: "the parent EtcdCluster could not be read; the finalizer is held"}
	}
	return releaseDecision{needMembership: true}
}

// decideWithMembership finishes the decision from etcd's member list: a member that is not in it
// has left etcd and its finalizer goes. One that is stays held, waiting for the EtcdCluster
// controller's MemberRemove when the operator initiated the deletion (removal-reason) or a person
// allowed it (allow-deletion), blocked otherwise.
func decideWithMembership(m *etcdv1alpha2.EtcdMember, members []etcdclient.Member) releaseDecision {
	if !inMembership(m, members) {
		return releaseDecision{release: true, message: "the member is not in etcd's member list"}
	}
	if deletionIntended(m) {
		return releaseDecision{message: msgWaitingForRemoval}
	}
	return releaseDecision{blocked: true, message: MsgDeletionBlocked}
}

// deletionIntended reports whether the operator recorded why it removes the member, or a person
// allowed the deletion.
func deletionIntended(m *etcdv1alpha2.EtcdMember) bool {
	return m.Annotations[etcdv1alpha2.AnnotationRemovalReason] != "" ||
		m.Annotations[etcdv1alpha2.AnnotationAllowDeletion] == "true"
}

// inMembership reports whether etcd lists the member: by ID when the member has one; otherwise
// (added as a learner, ID not yet recorded) by name, or, for a learner that has not started and
// so has no name yet, by the first DNS label of a peer URL, which is the member name.
func inMembership(m *etcdv1alpha2.EtcdMember, members []etcdclient.Member) bool {
	if m.Status.MemberID != "" {
		id, err := etcdclient.ParseID(m.Status.MemberID)
		if err != nil {
			// An unparsable ID cannot be matched; holding is the safe answer.
			return true
		}
		for _, e := range members {
			if e.ID == id {
				return true
			}
		}
		return false
	}
	for _, e := range members {
		if e.Name == m.Name {
			return true
		}
		for _, p := range e.PeerURLs {
			if u, err := url.Parse(p); err == nil && strings.SplitN(u.Hostname(), ".", 2)[0] == m.Name {
				return true
			}
		}
	}
	return false
}

// reconcileDelete is the deletion branch: release the finalizer when allowed, hold it
// otherwise, and say why in the Ready condition.
func (r *Reconciler) reconcileDelete(ctx context.Context, sc *scope) (step.Result, error) {
	log := logf.FromContext(ctx)
	m := sc.member
	if !controllerutil.ContainsFinalizer(m, etcdv1alpha2.FinalizerMemberCleanup) {
		return step.Stop(""), nil
	}
	d := decideWithoutEtcd(m, sc.parentState)
	if d.needMembership && r.removedByThisOperator(sc) {
		d = releaseDecision{release: true, message: msgRemovedByThisOperator}
	}
	var listErr error
	dialled := d.needMembership
	if d.needMembership {
		members, err := r.memberList(ctx, sc)
		if err != nil {
			listErr = err
			d = releaseDecision{message: "the finalizer is held: etcd's member list could not be read: " + etcdclient.Sanitize(err.Error())}
		} else {
			d = decideWithMembership(m, members)
		}
	}
	sc.notes.deletion = &d

	switch {
	case d.release:
		if res, err := r.deleteRemovedMembersPod(ctx, sc); err != nil {
			return res, err
		}
		if err := r.removeFinalizer(ctx, sc); err != nil {
			return step.Result{}, err
		}
		sc.notes.released = true
		log.Info("Released the member-cleanup finalizer", "reason", d.message)
		if dialled {
			// Deletions are rare; an idle cluster keeps no member-controller client.
			_ = r.etcd.Forget(etcdClientKey(m))
		}
		return step.Stop(""), nil
	case sc.parentState == parentUnreadable:
		return step.Result{}, sc.parentErr
	case listErr != nil:
		return step.Requeue(etcdUnreachableRetry, "etcd unreachable"), nil
	case d.blocked:
		// Ready quotes the held deletion (after what the Pod says, as the member still serves):
		// once it does, the Warning was already given.
		if cur := readyConditionOf(sc.original); cur == nil || !strings.Contains(cur.Message, d.message) {
			log.Info("Holding a deletion the operator did not initiate", "reason", d.message)
			r.event(sc, corev1.EventTypeWarning, EventMemberDeletionBlocked, actionHold,
				"Deletion of member %s (ID %s) is held: set annotation %s=\"true\" to let the operator remove it from etcd and replace it",
				m.Name, m.Status.MemberID, etcdv1alpha2.AnnotationAllowDeletion)
		}
		// A person acts next; their annotation is a watch event.
		return step.Stop(""), nil
	}
	return step.Requeue(memberRemovalPoll, "waiting for MemberRemove"), nil
}

// msgRemovedByThisOperator is the release reason of a member this process removed from etcd.
const msgRemovedByThisOperator = "the EtcdCluster controller removed the member from etcd"

// removedByThisOperator reports whether this process's EtcdCluster controller removed the
// member from etcd: its MemberRemove of the member's recorded ID returned. The finalizer then
// goes without a MemberList, which saves a dial on every scale-down step and works when no
// member is left to answer it. A member without a recorded ID, or removed by an earlier process
// (the record is in memory only), is looked up in etcd as before.
func (r *Reconciler) removedByThisOperator(sc *scope) bool {
	if r.views == nil || sc.parent == nil || sc.member.Status.MemberID == "" {
		return false
	}
	id, err := etcdclient.ParseID(sc.member.Status.MemberID)
	if err != nil {
		return false
	}
	return r.views.Removed(client.ObjectKeyFromObject(sc.parent), id)
}

// deleteRemovedMembersPod deletes the Pod of a member that left etcd, before its finalizer goes:
// the garbage collector would delete it once the EtcdMember is gone, one hop later, and a
// scale-down is done only once no removed member's Pod is left terminating. The member serves
// nothing any more (etcd no longer lists it, and its etcd stops itself on learning that), so
// nothing is lost by stopping it now, and the Pod is deleted without a grace period: there is
// nothing for it to finish, and waiting for the kubelet to confirm the stop only keeps a
// terminating Pod in the cluster's view for longer (docs/design/member-controller.md, "The
// finalizer"). The name is never reused by another member, so no second Pod under it can meet
// the one the kubelet is still stopping. A cluster being deleted leaves everything to the
// garbage collector.
func (r *Reconciler) deleteRemovedMembersPod(ctx context.Context, sc *scope) (step.Result, error) {
	if sc.parentState != parentPresent || sc.pod == nil || !sc.podOwned || !sc.pod.DeletionTimestamp.IsZero() {
		return step.Continue, nil
	}
	return r.deletePod(ctx, sc, "the member left etcd", client.GracePeriodSeconds(0))
}

// removeFinalizer removes the member-cleanup finalizer with an optimistic lock.
func (r *Reconciler) removeFinalizer(ctx context.Context, sc *scope) error {
	base := sc.member.DeepCopy()
	controllerutil.RemoveFinalizer(sc.member, etcdv1alpha2.FinalizerMemberCleanup)
	err := r.client.Patch(ctx, sc.member, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing finalizer %s: %w", etcdv1alpha2.FinalizerMemberCleanup, err)
	}
	return nil
}

// etcdClientKey is the pool key of the member controller's etcd client for the member's
// cluster. It differs from the EtcdCluster controller's key on purpose: the two controllers
// may build different endpoint sets, and sharing a key would make each close the other's
// client.
func etcdClientKey(m *etcdv1alpha2.EtcdMember) string {
	return m.Namespace + "/" + m.Spec.ClusterName + "#member-controller"
}

// errNoEndpoints means no member Pod of the cluster has an IP to dial.
var errNoEndpoints = errors.New("no member Pod of the cluster has an IP address")

// memberList reads etcd's member list through the cluster's client.
func (r *Reconciler) memberList(ctx context.Context, sc *scope) ([]etcdclient.Member, error) {
	cfg, err := r.etcdConfig(ctx, sc)
	if err != nil {
		return nil, err
	}
	c, err := r.etcd.Get(ctx, etcdClientKey(sc.member), cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd: %w", err)
	}
	members, err := c.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing etcd members: %w", err)
	}
	return members, nil
}
