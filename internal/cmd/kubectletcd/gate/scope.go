// Package gate lets kubectl-etcd's membership commands decide with the operator's own pure
// functions instead of copies of them: it projects what the custom resources say about a cluster
// into the operator's planner scope, over which quorum.Check (through Scope.QuorumView) and
// membership.RankVictims run unchanged (docs/design/quorum.md, "The gate in the planner"), and
// records their verdicts as the checks of a plan.
package gate

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
)

// Scope is s as the operator's planner would see it without dialling etcd. etcd's member list
// comes from each member's status.memberID and status.isVoter; a member answered Status when its
// Healthy condition is True; Pod readiness comes from the Pods (read them with
// clusterread.Options{Pods: true}). It is as pessimistic as the operator's own view: a member
// whose health the operator has not confirmed counts as unhealthy (docs/design/quorum.md,
// "Vocabulary"). The leader is not known, so no member ranks as the leader.
func Scope(s *clusterread.State) *membership.Scope {
	c := s.Cluster
	sc := &membership.Scope{
		Target:    clusterread.Replicas(c),
		ClusterID: c.Status.ClusterID,
		Etcd:      membership.Etcd{Statuses: map[uint64]etcdclient.Status{}},
		Recovery:  c.Status.QuorumRecovery,
		Approval:  c.Annotations[etcdv1alpha2.AnnotationApproveRecovery],
		Memory:    c.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory,
	}
	for i := range s.Members {
		m := &s.Members[i]
		v := Member(m, s.Pods[m.Name])
		sc.Members = append(sc.Members, v)
		if v.MemberID == 0 {
			continue
		}
		e := etcdclient.Member{ID: v.MemberID, PeerURLs: []string{v.PeerURL}, IsLearner: !m.Status.IsVoter}
		if v.PodRunning {
			// etcd lists a member that never started without a name.
			e.Name = m.Name
		}
		sc.Etcd.Members = append(sc.Etcd.Members, e)
		if meta.IsStatusConditionTrue(m.Status.Conditions, etcdv1alpha2.ConditionHealthy) {
			sc.Etcd.Statuses[v.MemberID] = etcdclient.Status{ID: v.MemberID, IsLearner: !m.Status.IsVoter}
		}
	}
	return sc
}

// Member projects one EtcdMember and its Pod (nil without one) as the cluster controller does
// for its planner. Without the latched template's hash, the member's Updated condition stands
// for "runs the latched template".
func Member(m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) membership.Member {
	_, removeFirst := m.Annotations[etcdv1alpha2.AnnotationRemoveFirst]
	replaceReason, replaceAnnotated := m.Annotations[etcdv1alpha2.AnnotationReplace]
	// An unparsable ID is treated as unknown, as the operator does.
	id, _ := etcdclient.ParseID(m.Status.MemberID)
	healthy := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy)
	updated := meta.IsStatusConditionTrue(m.Status.Conditions, etcdv1alpha2.ConditionUpdated)
	v := membership.Member{
		Name:             m.Name,
		UID:              string(m.UID),
		Created:          m.CreationTimestamp.Time,
		PeerURL:          desired.PeerURL(m),
		Bootstrap:        m.Spec.Bootstrap,
		Pending:          m.Spec.InitialCluster == "",
		Dormant:          m.Spec.Dormant,
		Deleting:         !m.DeletionTimestamp.IsZero(),
		RemovalReason:    m.Annotations[etcdv1alpha2.AnnotationRemovalReason],
		RemoveFirst:      removeFirst,
		AllowDeletion:    m.Annotations[etcdv1alpha2.AnnotationAllowDeletion] == "true",
		Unhealthy:        healthy != nil && healthy.Status == metav1.ConditionFalse,
		Updated:          updated,
		TemplateCurrent:  updated,
		PodRunning:       podstate.Running(pod),
		PodReady:         podstate.Serving(pod),
		Ready:            meta.IsStatusConditionTrue(m.Status.Conditions, etcdv1alpha2.ConditionReady) && podstate.Serving(pod),
		VoterHint:        m.Status.IsVoter,
		MemberID:         id,
		ReplaceRequested: replaceReason,
		ReplaceAnnotated: replaceAnnotated,
		Version:          m.Status.Version,
	}
	if v.Unhealthy {
		v.HealthyReason, v.HealthyMessage = healthy.Reason, healthy.Message
	}
	return v
}

// Find returns the member of s named name.
func Find(s *clusterread.State, name string) (*etcdv1alpha2.EtcdMember, bool) {
	i := slices.IndexFunc(s.Members, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == name })
	if i < 0 {
		return nil, false
	}
	return &s.Members[i], true
}
