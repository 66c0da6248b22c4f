package etcdcluster

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// renderedStatus is the cluster's status as one pass leaves it, with the scope and counts it
// was computed from (the PDB and the endpoint views are derived from the same).
type renderedStatus struct {
	status etcdv1alpha2.EtcdClusterStatus
	scope  membership.Scope
	counts membership.Counts
}

// renderStatus computes the cluster's status from the pass's plan and what its executed actions
// contributed (docs/design/reconcile-pass.md, status). It is pure: the same observation and plan
// give the same status, so an idle pass renders what it read and writes nothing.
func renderStatus(o *observation, plan *membership.Plan, fx effects) renderedStatus {
	c := o.cluster
	st := *c.Status.DeepCopy()
	if st.ClusterToken == "" {
		st.ClusterToken = membership.Token(c.Namespace, c.Name, string(c.UID))
	}
	st.Selector = etcdv1alpha2.LabelCluster + "=" + c.Name
	st.Observed, st.ObservedGeneration, st.ProgressDeadline = plan.Lock.Observed, plan.Lock.ObservedGeneration, plan.Lock.Deadline
	if fx.clusterID != "" {
		st.ClusterID = fx.clusterID
	}
	if fx.backoff != nil {
		st.ReplacementBackoff = fx.backoff
	}
	if fx.authEnabled {
		st.AuthEnabled = true
	}
	st.LastSnapshot = o.lastSnapshot
	switch {
	case fx.recovery != nil:
		st.QuorumRecovery = fx.recovery
	case fx.clearRecovery:
		st.QuorumRecovery = nil
	}

	// The scope the plan left, with what this pass's own status writes and executed actions
	// change in it.
	s := plan.After
	s.ClusterID = st.ClusterID
	if b := st.ReplacementBackoff; b != nil {
		s.Backoff = membership.Backoff{Attempts: b.Attempts, NotBefore: b.NotBefore.Time}
	}
	if fx.removed != nil {
		s = withoutRemoved(s, *fx.removed)
	}
	counts := membership.Count(&s)
	st.ReadyMembers = int32(counts.ReadyVoters) //nolint:gosec // G115: bounded by the member count
	st.UpdatedMembers = int32(counts.Updated)   //nolint:gosec // G115: as above
	st.BrokenMembers = int32(counts.Broken)     //nolint:gosec // G115: as above
	if v := membership.LowestRunning(&s); v != "" {
		st.RunningVersion = v
	}
	st.MinorSince = membership.NextMinorSince(st.MinorSince, minorInput(c, &st, &s))
	if plan.Action.Kind == membership.KindNone && plan.Action.Reason == membership.ReasonReconciled {
		// Converged: the next member that fails to start begins a fresh back-off.
		st.ReplacementBackoff = nil
	}
	for _, cond := range membership.Conditions(membership.ConditionInput{Scope: &s, Action: plan.Action, Lock: plan.Lock, Generation: c.Generation}) {
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	return renderedStatus{status: st, scope: s, counts: counts}
}

// minorInput gathers what membership.NextMinorSince needs: whether this operator forms the
// cluster (no cluster ID before this pass), the latched version and etcd's answers.
func minorInput(c *etcdv1alpha2.EtcdCluster, st *etcdv1alpha2.EtcdClusterStatus, s *membership.Scope) membership.MinorInput {
	in := membership.MinorInput{
		Forming:       c.Status.ClusterID == "",
		Known:         s.Etcd.Known,
		Statuses:      s.Etcd.Statuses,
		SnapshotCount: membership.SnapshotCount(st.Observed),
	}
	if st.Observed != nil {
		in.Latched = st.Observed.Version
	}
	for _, m := range s.Etcd.Members {
		in.Members = append(in.Members, m.ID)
	}
	return in
}

// withoutRemoved is s after an executed removal: etcd no longer lists the member, and its
// EtcdMember is on its way out. Without it, the pass that removed the last member of a scale-down
// would still count it, and readyMembers would reach the target only a pass later.
func withoutRemoved(s membership.Scope, rm removal) membership.Scope {
	if rm.inEtcd {
		s.Etcd.Members = slices.DeleteFunc(slices.Clone(s.Etcd.Members), func(e etcdclient.Member) bool { return e.ID == rm.memberID })
	}
	s.Members = slices.Clone(s.Members)
	for i := range s.Members {
		if s.Members[i].Name == rm.member {
			s.Members[i].Deleting, s.Members[i].RemovalReason = true, rm.reason
		}
	}
	return s
}
