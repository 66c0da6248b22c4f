package gate

import (
	"fmt"
	"slices"
	"strings"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Rules the membership commands share; a refusal names one (exit 3).
const (
	// RuleMemberOfCluster: the member named is one of the cluster's EtcdMembers.
	RuleMemberOfCluster = "member-of-cluster"
	// RulePaused: a paused cluster's only member is dormant; nothing can be removed from it.
	RulePaused = "paused"
	// RuleMemberLeaving: the member is not already on its way out.
	RuleMemberLeaving = "member-leaving"
	// RuleQuorum: quorum.Check allows the member's removal (docs/design/quorum.md).
	RuleQuorum = "quorum"
)

// CheckMember records whether name is one of s's members and returns it; nil when it is not.
func CheckMember(p *mutation.Plan, s *clusterread.State, name string) *etcdv1alpha2.EtcdMember {
	m, ok := Find(s, name)
	if !ok {
		names := make([]string, 0, len(s.Members))
		for _, m := range s.Members {
			names = append(names, m.Name)
		}
		p.Check(RuleMemberOfCluster, false, fmt.Sprintf("%s is not an EtcdMember of %s; its members are: %s",
			name, s.Cluster.Name, orNone(names)))
		return nil
	}
	p.Check(RuleMemberOfCluster, true, fmt.Sprintf("%s is a member of %s", name, s.Cluster.Name))
	return m
}

// CheckNotPaused records whether c runs at all.
func CheckNotPaused(p *mutation.Plan, c *etcdv1alpha2.EtcdCluster) bool {
	if r := clusterread.Replicas(c); r == 0 {
		p.Check(RulePaused, false, "the cluster is paused (spec.replicas 0): its only member is dormant; resume it first (kubectl etcd resume)")
		return false
	}
	p.Check(RulePaused, true, fmt.Sprintf("the cluster runs (spec.replicas %d)", clusterread.Replicas(c)))
	return true
}

// CheckNotLeaving records whether m is still a running member that nothing removes yet.
func CheckNotLeaving(p *mutation.Plan, m *etcdv1alpha2.EtcdMember) bool {
	var why string
	switch r := m.Annotations[etcdv1alpha2.AnnotationRemovalReason]; {
	case r != "":
		why = fmt.Sprintf("the operator is already removing %s (removal-reason %s)", m.Name, r)
	case !m.DeletionTimestamp.IsZero():
		why = fmt.Sprintf("%s is being deleted; its deletion is a replacement once allowed (docs/failure-modes.md)", m.Name)
	case m.Spec.Dormant:
		why = fmt.Sprintf("%s is dormant: it has no Pod and runs no etcd", m.Name)
	}
	if why != "" {
		p.Check(RuleMemberLeaving, false, why)
		return false
	}
	p.Check(RuleMemberLeaving, true, fmt.Sprintf("nothing removes %s yet", m.Name))
	return true
}

// CheckRemoval records the quorum gate's verdict on removing m, over the membership sc projects.
// A member never added to etcd costs no quorum; one whose etcd member ID is not recorded yet
// cannot be placed in the membership, so its removal is refused until it is.
func CheckRemoval(p *mutation.Plan, sc *membership.Scope, m *etcdv1alpha2.EtcdMember) bool {
	view := sc.QuorumView()
	inView := slices.ContainsFunc(view.Voters, func(v quorum.Voter) bool { return v.Name == m.Name }) ||
		slices.ContainsFunc(view.Learners, func(l quorum.Learner) bool { return l.Name == m.Name })
	switch {
	case !inView && m.Spec.InitialCluster == "":
		p.Check(RuleQuorum, true, fmt.Sprintf("%s was never added to etcd: removing it changes no quorum", m.Name))
		return true
	case !inView:
		p.Check(RuleQuorum, false, fmt.Sprintf("%s has no etcd member ID recorded yet (status.memberID), so its place in the quorum is unknown; wait until the operator records it", m.Name))
		return false
	}
	d := quorum.Check(view, quorum.Remove(m.Name))
	msg := d.Message
	if unhealthy := countedUnhealthy(sc, view); !d.Allowed && len(unhealthy) > 0 {
		msg += "; counted unhealthy: " + strings.Join(unhealthy, ", ")
	}
	p.Check(RuleQuorum, d.Allowed, msg)
	return d.Allowed
}

// countedUnhealthy names the voters the gate does not count as healthy, each with why.
func countedUnhealthy(sc *membership.Scope, view quorum.View) []string {
	var out []string
	for _, v := range view.Voters {
		if v.CountsHealthy() {
			continue
		}
		i := slices.IndexFunc(sc.Members, func(m membership.Member) bool { return m.Name == v.Name })
		if i < 0 {
			out = append(out, v.Name)
			continue
		}
		out = append(out, v.Name+" ("+whyUnhealthy(sc, sc.Members[i])+")")
	}
	return out
}

func whyUnhealthy(sc *membership.Scope, m membership.Member) string {
	switch {
	case m.Unhealthy:
		return "Healthy=False/" + m.HealthyReason
	case !m.PodReady:
		return "Pod not Ready"
	}
	if _, answered := sc.Etcd.Statuses[m.MemberID]; !answered {
		return "health not confirmed by the operator"
	}
	return "unhealthy"
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
