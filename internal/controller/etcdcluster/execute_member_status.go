package etcdcluster

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// syncMemberStatus writes the plan's member status fields (memberID, isVoter, version: what
// etcd's member list and Status answers say of each member), the status this controller owns on
// members.
func (x *executor) syncMemberStatus(ctx context.Context) (step.Result, error) {
	for _, w := range x.plan.MemberStatus {
		m, err := x.member(w.Member)
		if err != nil {
			return step.Result{}, err
		}
		if _, err := x.patchMemberStatus(ctx, m, etcdclient.FormatID(w.MemberID), w.IsVoter, w.Version); err != nil {
			return step.Result{}, err
		}
	}
	return step.Continue, nil
}

// patchMemberStatus merge-patches the three status fields this controller owns, leaving the
// member controller's fields (podName, podUID, pvcName, replicas, selector, conditions) alone.
// It reports whether it wrote: nothing is written when the fields already hold the values.
func (x *executor) patchMemberStatus(ctx context.Context, m *etcdv1alpha2.EtcdMember, id string, voter bool, version string) (bool, error) {
	if m.Status.MemberID == id && m.Status.IsVoter == voter && m.Status.Version == version {
		return false, nil
	}
	before := m.DeepCopy()
	m.Status.MemberID, m.Status.IsVoter, m.Status.Version = id, voter, version
	if err := x.client.Status().Patch(ctx, m, client.MergeFrom(before)); err != nil {
		return false, fmt.Errorf("patching the status of EtcdMember %s: %w", m.Name, err)
	}
	x.written[m.Name] = m.DeepCopy()
	failpoint.Inject(ctx, failpoint.MemberStatusPatched)
	return true, nil
}
