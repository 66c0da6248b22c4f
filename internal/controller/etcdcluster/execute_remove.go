package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// remove records the intent (removal-reason), removes the member from etcd, and deletes its
// EtcdMember (docs/design/membership-flows.md, scale down; the same steps replace a failed
// member and remove a Memory member a surge replaced). Each step is skipped when done, so a
// crash anywhere is finished next pass; the member controller's finalizer releases once etcd no
// longer lists the member.
func (x *executor) remove(ctx context.Context, a membership.Action) (step.Result, error) {
	m, err := x.member(a.Member)
	if err != nil {
		return step.Result{}, err
	}
	if m.Annotations[etcdv1alpha2.AnnotationRemovalReason] == "" {
		before := m.DeepCopy()
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[etcdv1alpha2.AnnotationRemovalReason] = a.RemovalReason
		if err := x.patchMember(ctx, m, before, "recording the removal of"); err != nil {
			return step.Result{}, err
		}
		failpoint.Inject(ctx, failpoint.RemovalReasonSet)
	}
	if a.InEtcd {
		if res, err := x.removeFromEtcd(ctx, a); err != nil || res.Done() {
			return res, err
		}
		failpoint.Inject(ctx, failpoint.MemberRemoved)
		x.memberEvent(m, corev1.EventTypeNormal, eventMemberRemoved, fmt.Sprintf("removed %s (%s): %s", m.Name, etcdclient.FormatID(a.MemberID), m.Annotations[etcdv1alpha2.AnnotationRemovalReason]))
	}
	if m.DeletionTimestamp.IsZero() {
		if err := x.client.Delete(ctx, m, client.Preconditions{UID: &m.UID}); err != nil && !apierrors.IsNotFound(err) {
			return step.Result{}, fmt.Errorf("deleting EtcdMember %s: %w", m.Name, err)
		}
		failpoint.Inject(ctx, failpoint.MemberDeleted)
	}
	x.effects.removed = &removal{member: m.Name, reason: m.Annotations[etcdv1alpha2.AnnotationRemovalReason], memberID: a.MemberID, inEtcd: a.InEtcd}
	return step.Continue, nil
}

// removeOrphan removes an etcd member no EtcdMember explains (docs/design/membership-flows.md,
// orphans), after the orphan grace the planner waited.
func (x *executor) removeOrphan(ctx context.Context, a membership.Action) (step.Result, error) {
	if res, err := x.removeFromEtcd(ctx, a); err != nil || res.Done() {
		return res, err
	}
	failpoint.Inject(ctx, failpoint.OrphanRemoved)
	x.event(corev1.EventTypeNormal, eventMemberRemoved, "removed learner "+etcdclient.FormatID(a.MemberID)+", which no EtcdMember explained")
	return step.Continue, nil
}

// removeFromEtcd removes a.MemberID from etcd once a fresh member list confirms the plan.
func (x *executor) removeFromEtcd(ctx context.Context, a membership.Action) (step.Result, error) {
	cli, err := x.etcd()
	if err != nil {
		return step.Result{}, err
	}
	if res, err := x.stillPlanned(ctx, cli, a); err != nil || res.Done() {
		return res, err
	}
	res, err := memberRemove(ctx, cli, x.key(), a.MemberID)
	if err == nil && !res.Done() && x.views != nil {
		// The EtcdMember controller releases the member's finalizer on this record instead of
		// asking etcd again (docs/design/member-controller.md, "The finalizer").
		x.views.RecordRemoved(x.key(), a.MemberID)
	}
	return res, err
}

// memberRemove removes a member from etcd; "not found" means a previous pass did. Any other
// error is ambiguous: a member asked to remove itself applies the change and stops before it
// answers ("server stopped"), and a timeout may hide a change that was applied. A fresh member
// list that no longer names the member settles it as done, so the removal is reported
// (docs/design/membership-flows.md, "Ambiguous answers").
func memberRemove(ctx context.Context, cli etcdAPI, key types.NamespacedName, id uint64) (step.Result, error) {
	if _, err := cli.MemberRemove(ctx, id); err != nil && !errors.Is(err, etcdclient.ErrMemberNotFound) && !goneFromEtcd(ctx, cli, id) {
		return waitingOn(key, metricRemove, fmt.Errorf("removing member %s: %w", etcdclient.FormatID(id), err), membership.MembershipPoll,
			etcdclient.ErrNotEnoughStartedMembers, etcdclient.ErrUnhealthyCluster, etcdclient.ErrNoLeader)
	}
	metrics.MembershipAction(key.Namespace, key.Name, metricRemove, metrics.OutcomeSuccess)
	return step.Continue, nil
}

// goneFromEtcd reports whether a fresh member list answers and no longer names id.
func goneFromEtcd(ctx context.Context, cli etcdAPI, id uint64) bool {
	list, err := cli.MemberList(ctx)
	return err == nil && !slices.ContainsFunc(list, func(m etcdclient.Member) bool { return m.ID == id })
}
