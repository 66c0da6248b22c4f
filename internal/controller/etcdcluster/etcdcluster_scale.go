package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
)

// join adds a pending member as a learner, unless a previous pass already did, and patches its
// initialCluster from the member list etcd returned (behaviour.md §6 step 1). The patch must
// precede any promotion: a learner without a Pod never catches up.
func (p *pass) join(ctx context.Context, a membership.Action) error {
	m, err := p.member(a.Member)
	if err != nil {
		return err
	}
	list := p.view.Members
	if !a.InEtcd {
		if err := p.stillPlanned(ctx, a); err != nil {
			return err
		}
		added, after, err := p.etcd.MemberAddAsLearner(ctx, []string{a.PeerURL})
		switch {
		case errors.Is(err, etcdclient.ErrPeerURLExists):
			// Another replica (or our previous life) added it meanwhile: that is success.
			if after, err = p.etcd.MemberList(ctx); err != nil {
				return fmt.Errorf("listing members after a duplicate add of %s: %w", m.Name, err)
			}
		case err != nil:
			return waitingOn(metricAddLearner, fmt.Errorf("adding %s as a learner: %w", m.Name, err), membership.MembershipPoll,
				etcdclient.ErrUnhealthyCluster, etcdclient.ErrTooManyLearners, etcdclient.ErrNoLeader, etcdclient.ErrNotEnoughStartedMembers)
		default:
			metrics.MembershipAction(metricAddLearner, metrics.OutcomeSuccess)
			failpoint.Inject(failpoint.LearnerAdded)
			p.memberEvent(m, corev1.EventTypeNormal, eventLearnerAdded, fmt.Sprintf("added %s as learner %s", m.Name, added.IDHex()))
		}
		list = after
	}
	if err := p.patchInitialCluster(ctx, m, membership.InitialCluster(list, m.Name, a.PeerURL)); err != nil {
		return err
	}
	failpoint.Inject(failpoint.LearnerInitialClusterPatched)
	return nil
}

// promote promotes a started learner (§6 step 2). "Not in sync" is waiting, not failure.
func (p *pass) promote(ctx context.Context, a membership.Action) error {
	m, err := p.member(a.Member)
	if err != nil {
		return err
	}
	if _, err := p.etcd.MemberPromote(ctx, a.MemberID); err != nil && !errors.Is(err, etcdclient.ErrMemberNotLearner) {
		return waitingOn(metricPromote, fmt.Errorf("promoting %s: %w", m.Name, err), membership.PromoteRetry,
			etcdclient.ErrLearnerNotReady, etcdclient.ErrNotEnoughStartedMembers, etcdclient.ErrUnhealthyCluster, etcdclient.ErrNoLeader)
	}
	metrics.MembershipAction(metricPromote, metrics.OutcomeSuccess)
	failpoint.Inject(failpoint.LearnerPromoted)
	p.memberEvent(m, corev1.EventTypeNormal, eventLearnerPromoted, fmt.Sprintf("promoted %s (%s) to voter", m.Name, etcdclient.FormatID(a.MemberID)))
	_, err = p.patchMemberStatus(ctx, m, etcdclient.FormatID(a.MemberID), true, m.Status.Version)
	return err
}

// removeOrphan removes a learner no EtcdMember explains (§6 step 3).
func (p *pass) removeOrphan(ctx context.Context, a membership.Action) error {
	if err := p.stillPlanned(ctx, a); err != nil {
		return err
	}
	if err := p.memberRemove(ctx, a.MemberID); err != nil {
		return err
	}
	failpoint.Inject(failpoint.OrphanRemoved)
	p.event(corev1.EventTypeNormal, eventMemberRemoved, "removed learner "+etcdclient.FormatID(a.MemberID)+", which no EtcdMember explained")
	return nil
}

// memberRemove removes a member from etcd; "not found" means a previous pass did.
func (p *pass) memberRemove(ctx context.Context, id uint64) error {
	if _, err := p.etcd.MemberRemove(ctx, id); err != nil && !errors.Is(err, etcdclient.ErrMemberNotFound) {
		return waitingOn(metricRemove, fmt.Errorf("removing member %s: %w", etcdclient.FormatID(id), err), membership.MembershipPoll,
			etcdclient.ErrNotEnoughStartedMembers, etcdclient.ErrUnhealthyCluster, etcdclient.ErrNoLeader)
	}
	metrics.MembershipAction(metricRemove, metrics.OutcomeSuccess)
	return nil
}

// moveLeader moves leadership away from the scale-down victim (§7) or from the last member of a
// roll (§12); the next pass re-ranks.
func (p *pass) moveLeader(ctx context.Context, a membership.Action) error {
	if err := p.etcd.MoveLeader(ctx, a.MemberID); err != nil {
		return waitingOn(metricMoveLeader, fmt.Errorf("moving leadership to %s: %w", etcdclient.FormatID(a.MemberID), err), membership.MembershipPoll,
			etcdclient.ErrBadLeaderTransferee, etcdclient.ErrNotLeader, etcdclient.ErrNoLeader, etcdclient.ErrTimeout)
	}
	metrics.MembershipAction(metricMoveLeader, metrics.OutcomeSuccess)
	failpoint.Inject(failpoint.LeaderMoved)
	why := "removing"
	if a.Reason == membership.ReasonRollingUpdate {
		why = "restarting"
	}
	p.event(corev1.EventTypeNormal, eventLeaderMoved, fmt.Sprintf("moved leadership to %s before %s %s", etcdclient.FormatID(a.MemberID), why, a.Member))
	return nil
}

// remove records the intent (removal-reason), removes the member from etcd, and deletes its
// EtcdMember (§7). Each step is skipped when done, so a crash anywhere is finished next pass;
// the member controller's finalizer releases once etcd no longer lists the member.
func (p *pass) remove(ctx context.Context, a membership.Action) error {
	m, err := p.member(a.Member)
	if err != nil {
		return err
	}
	if m.Annotations[etcdv1alpha2.AnnotationRemovalReason] == "" {
		before := m.DeepCopy()
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[etcdv1alpha2.AnnotationRemovalReason] = a.RemovalReason
		if err := p.r.client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("recording the removal of EtcdMember %s: %w", m.Name, err)
		}
		failpoint.Inject(failpoint.RemovalReasonSet)
	}
	if a.InEtcd {
		if err := p.stillPlanned(ctx, a); err != nil {
			return err
		}
		if err := p.memberRemove(ctx, a.MemberID); err != nil {
			return err
		}
		failpoint.Inject(failpoint.MemberRemoved)
		p.memberEvent(m, corev1.EventTypeNormal, eventMemberRemoved, fmt.Sprintf("removed %s (%s): %s", m.Name, etcdclient.FormatID(a.MemberID), m.Annotations[etcdv1alpha2.AnnotationRemovalReason]))
	}
	if m.DeletionTimestamp.IsZero() {
		if err := p.r.client.Delete(ctx, m, client.Preconditions{UID: &m.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting EtcdMember %s: %w", m.Name, err)
		}
		failpoint.Inject(failpoint.MemberDeleted)
	}
	return nil
}

// deletePVC deletes the PVC of a member gone from Kubernetes and etcd. The cache of PVCs and the
// cache of EtcdMembers are separate informers, so an uncached read first confirms the member is
// really gone: a PVC of a member created a moment ago must never be taken for an orphan.
func (p *pass) deletePVC(ctx context.Context, a membership.Action) error {
	var pvc *corev1.PersistentVolumeClaim
	for i := range p.pvcs {
		if p.pvcs[i].Name == a.PVC {
			pvc = &p.pvcs[i]
		}
	}
	if pvc == nil {
		return fmt.Errorf("PVC %s is not in this pass's scope", a.PVC)
	}
	err := p.r.apiReader.Get(ctx, client.ObjectKey{Namespace: p.cluster.Namespace, Name: a.Member}, &etcdv1alpha2.EtcdMember{})
	switch {
	case err == nil:
		return &errWaiting{after: nextStepDelay, msg: "EtcdMember " + a.Member + " still exists"}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("confirming EtcdMember %s is gone: %w", a.Member, err)
	}
	if err := p.r.client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting PVC %s: %w", pvc.Name, err)
	}
	failpoint.Inject(failpoint.PVCDeleted)
	return nil
}

// setDormant pauses the last member (§8): the member controller deletes its Pod and keeps its
// PVC and identity.
func (p *pass) setDormant(ctx context.Context, a membership.Action) error {
	m, err := p.member(a.Member)
	if err != nil {
		return err
	}
	before := m.DeepCopy()
	m.Spec.Dormant = true
	if err := p.r.client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("making EtcdMember %s dormant: %w", m.Name, err)
	}
	failpoint.Inject(failpoint.DormantSet)
	p.memberEvent(m, corev1.EventTypeNormal, eventClusterPaused, fmt.Sprintf("paused; data kept in PVC data-%s", m.Name))
	return nil
}

// wake resumes a paused cluster (§8) with one patch: dormant off and the latched template, so
// the Pod is recreated from the PVC with the new target's template, not the old one — once the
// latched version may follow the one the member last ran (§14).
func (p *pass) wake(ctx context.Context, a membership.Action) error {
	m, err := p.member(a.Member)
	if err != nil {
		return err
	}
	if err := p.holdWakeForVersion(m); err != nil {
		return err
	}
	before := m.DeepCopy()
	m.Spec.Dormant = false
	membership.ApplyTemplate(&m.Spec, p.memberTarget(m))
	p.recordHash(m)
	if err := p.r.client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("waking EtcdMember %s: %w", m.Name, err)
	}
	failpoint.Inject(failpoint.MemberWoken)
	p.memberEvent(m, corev1.EventTypeNormal, eventClusterResumed, "resumed from member "+m.Name)
	return nil
}
