package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// setDormant pauses the cluster by making its last member dormant
// (docs/design/membership-flows.md, pause and resume): the member controller deletes its Pod and
// keeps its PVC and identity.
func (x *executor) setDormant(ctx context.Context, a membership.Action) (step.Result, error) {
	m, err := x.member(a.Member)
	if err != nil {
		return step.Result{}, err
	}
	before := m.DeepCopy()
	m.Spec.Dormant = true
	if err := x.patchMember(ctx, m, before, "making dormant"); err != nil {
		return step.Result{}, err
	}
	failpoint.Inject(ctx, failpoint.DormantSet)
	x.memberEvent(m, corev1.EventTypeNormal, eventClusterPaused, fmt.Sprintf("paused; data kept in PVC data-%s", m.Name))
	return step.Continue, nil
}

// wake resumes a paused cluster with one patch: dormant off and the latched template (with its
// hash authorised), so the Pod is recreated from the PVC with the new target's template, not the
// old one. The planner woke it only once the latched version may follow the one the member last
// ran (docs/design/versions.md).
func (x *executor) wake(ctx context.Context, a membership.Action) (step.Result, error) {
	m, err := x.member(a.Member)
	if err != nil {
		return step.Result{}, err
	}
	before := m.DeepCopy()
	m.Spec.Dormant = false
	applyMemberTemplate(x.cluster(), &m.Spec, x.obs.memberTarget(m))
	authoriseHash(m, x.obs.templateHash(&m.Spec))
	if err := x.patchMember(ctx, m, before, "waking"); err != nil {
		return step.Result{}, err
	}
	failpoint.Inject(ctx, failpoint.MemberWoken)
	x.memberEvent(m, corev1.EventTypeNormal, eventClusterResumed, "resumed from member "+m.Name)
	return step.Continue, nil
}
