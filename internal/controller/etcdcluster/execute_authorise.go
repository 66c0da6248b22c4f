package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// Event reasons of the rolling update (docs/design/conditions-and-events.md).
const (
	eventRollingUpdateStarted    = "RollingUpdateStarted"
	eventMemberUpdated           = "MemberUpdated"
	eventRollingUpdateDisruptive = "RollingUpdateDisruptive"
	eventRollingUpdateCompleted  = "RollingUpdateCompleted"
)

// authorise writes the latched template and its hash onto a member in one patch
// (docs/design/rolling-updates.md). The member controller restarts the member's Pod only when the
// Pod runs another hash, so a disruptive authorisation is one rolling-update step: quorum-gated
// by the planner, checked once more against a fresh member list, announced with an Event.
func (x *executor) authorise(ctx context.Context, a membership.Action) (step.Result, error) {
	m, err := x.member(a.Member)
	if err != nil {
		return step.Result{}, err
	}
	if a.Disrupts {
		cli, err := x.etcd()
		if err != nil {
			return step.Result{}, err
		}
		if res, err := x.stillPlanned(ctx, cli, a); err != nil || res.Done() {
			return res, err
		}
	}
	before := m.DeepCopy()
	applyMemberTemplate(x.cluster(), &m.Spec, x.obs.memberTarget(m))
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[etcdv1alpha2.AnnotationTemplateHash] = a.Hash
	if err := x.patchMember(ctx, m, before, "authorising template "+a.Hash+" on"); err != nil {
		return step.Result{}, err
	}
	failpoint.Inject(ctx, failpoint.TemplateAuthorised)
	if !a.Disrupts {
		return step.Continue, nil
	}
	if x.memory.startRoll(x.key()) {
		x.event(corev1.EventTypeNormal, eventRollingUpdateStarted, "rolling members to the latched template, one at a time: "+a.Message)
	}
	note := fmt.Sprintf("restarting %s (%s) with template %s: %s", m.Name, etcdclient.FormatID(a.MemberID), a.Hash, a.Message)
	x.memberEvent(m, corev1.EventTypeNormal, eventMemberUpdated, note)
	if a.Gate != nil && a.Gate.Disruptive {
		x.memberEvent(m, corev1.EventTypeWarning, eventRollingUpdateDisruptive,
			fmt.Sprintf("%s is the only voter: the cluster is unavailable while it restarts with template %s", m.Name, a.Hash))
	}
	return step.Continue, nil
}
