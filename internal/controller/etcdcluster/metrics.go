package etcdcluster

import (
	"k8s.io/apimachinery/pkg/api/meta"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// recordClusterMetrics sets the cluster's per-cluster series (docs/monitoring.md, "Metrics")
// from the status this pass rendered: the same scope and counts, and no etcd call of its own.
func (x *executor) recordClusterMetrics(r *renderedStatus) {
	metrics.SetClusterState(x.key().Namespace, x.key().Name, clusterState(r, runningQuota(x.cluster())))
}

// runningQuota is the backend quota the members run with: the latched spec's (members run
// status.observed), the spec's before the first adoption.
func runningQuota(c *etcdv1alpha2.EtcdCluster) int64 {
	opts, storage := c.Spec.Options, c.Spec.Storage
	if o := c.Status.Observed; o != nil {
		opts, storage = o.Options, o.Storage
	}
	return desired.QuotaBackendBytes(opts, desired.StorageSize(storage))
}

// clusterState maps a rendered status to the metrics' terms. Pure, for tests.
func clusterState(r *renderedStatus, quota int64) metrics.ClusterState {
	s := &r.scope
	st := metrics.ClusterState{
		Desired:      int(s.Target),
		Ready:        r.counts.ReadyVoters,
		Voters:       r.counts.Voters,
		QuorumMargin: r.counts.ReadyVoters - quorum.Of(r.counts.Voters),
		EtcdKnown:    s.Etcd.Known,
		Leader:       s.Etcd.Leader,
		QuotaBytes:   quota,
		Alarms:       map[string]int{},
	}
	for _, e := range s.Etcd.Members {
		if e.IsLearner {
			st.Learners++
		}
	}
	for _, a := range s.Etcd.Alarms {
		st.Alarms[string(a.Type)]++
	}
	reason := ""
	if c := meta.FindStatusCondition(r.status.Conditions, etcdv1alpha2.ConditionProgressing); c != nil {
		reason = c.Reason
	}
	// s.Rolling covers the steps of a roll that report another reason (a Memory member's
	// replacement promotes a learner).
	st.Rolling = s.Rolling || reason == membership.ReasonRollingUpdate
	st.Healing = s.Recovery != nil || reason == membership.ReasonReplacingMember || reason == membership.ReasonRecoveringQuorum
	for _, m := range s.Running() {
		ms := metrics.MemberState{Name: m.Name}
		if e, ok := s.EtcdMemberOf(m); ok && s.Etcd.Known {
			if status, answered := s.Etcd.Statuses[e.ID]; answered {
				ms.Up, ms.DBSize, ms.DBSizeInUse = true, status.DBSize, status.DBSizeInUse
			}
		}
		st.Members = append(st.Members, ms)
	}
	return st
}
