// Package removemember is `kubectl etcd remove-member`: it annotates the member remove-first and
// lowers spec.replicas by one, so that the operator's own scale-down removes that member, through
// its quorum gate (docs/lifecycle.md, "Choose which member goes on scale-down"). The plugin never
// calls MemberRemove itself: a second writer of membership would race the operator.
package removemember

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/follow"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/gate"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// Rules this command checks, besides gate's member-of-cluster, paused, member-leaving and quorum.
const (
	// RuleMinReplicas: a cluster keeps at least one member; pause keeps the data instead.
	RuleMinReplicas = "min-replicas"
	// RuleVictim: the operator's victim ranking (membership.RankVictims) picks this member.
	RuleVictim = "victim"
)

// annotationValue is the remove-first value written; its presence is what counts.
const annotationValue = "true"

// Options are the command's arguments.
type Options struct {
	Cluster, Member string
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "remove-member CLUSTER MEMBER",
		Short: "Shrink the cluster by one, removing the member you name",
		Long: `remove-member annotates MEMBER remove-first and sets spec.replicas to one less. The operator's
scale-down then removes that member: it moves leadership away if the member leads, removes it
from etcd once its quorum gate allows it, and deletes its EtcdMember and PVC.

The plan runs the operator's own checks first: the quorum gate over the members' health as the
operator last reported it, and its victim ranking. It refuses to go below one member, to remove a
member of another cluster, and to touch a paused cluster.`,
		Example: `  kubectl etcd remove-member demo demo-x7k2p                  # show the plan and its checks
  kubectl etcd remove-member demo demo-x7k2p --apply --wait   # remove it and follow until the cluster is Available`,
		Args: invocation.ExactArgs("CLUSTER", "MEMBER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			return Run(cmd.Context(), Options{Cluster: args[0], Member: args[1]}, d)
		},
	}
}

// Run plans the removal, and applies it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{Pods: true})
	if err != nil {
		return err
	}
	p := Plan(s, o.Member)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		m, _ := gate.Find(s, o.Member)
		replicas := clusterread.Replicas(s.Cluster) - 1
		if err := apply(ctx, d.Kube, s.Cluster, m, replicas); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Asked the operator to remove %s: %s is annotated %s and spec.replicas is %d.\n",
			o.Member, o.Member, etcdv1alpha2.AnnotationRemoveFirst, replicas)
		if !d.Globals.Wait {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, follow.MaxWait)
		defer cancel()
		return follow.Until(ctx, d, o.Cluster, clusterread.Options{}, func(s *clusterread.State) (bool, string, error) {
			return removed(s, o.Member, replicas)
		})
	})
}

// Plan decides what removing member from the cluster s shows takes.
func Plan(s *clusterread.State, member string) *mutation.Plan {
	c := s.Cluster
	p := mutation.New("remove-member", c.Namespace, c.Name)
	m := gate.CheckMember(p, s, member)
	if m == nil || !gate.CheckNotPaused(p, c) {
		return p
	}
	replicas := clusterread.Replicas(c)
	if replicas-1 < 1 {
		p.Check(RuleMinReplicas, false, fmt.Sprintf("spec.replicas is %d: removing %s would leave no member; pause the cluster to stop it and keep its data (kubectl etcd pause)", replicas, member))
		return p
	}
	p.Check(RuleMinReplicas, true, fmt.Sprintf("%d members remain, at least 1", replicas-1))
	if !gate.CheckNotLeaving(p, m) {
		return p
	}
	sc := gate.Scope(s)
	if !checkVictim(p, sc, member) || !gate.CheckRemoval(p, sc, m) {
		return p
	}
	key := etcdv1alpha2.AnnotationRemoveFirst
	if _, ok := m.Annotations[key]; ok {
		p.Step("patch", "EtcdMember "+c.Namespace+"/"+member, fmt.Sprintf("keep annotation %s (already present)", key))
	} else {
		p.Step("patch", "EtcdMember "+c.Namespace+"/"+member, fmt.Sprintf("annotate %s=%s", key, annotationValue))
	}
	p.Step("patch", "EtcdCluster "+p.Cluster, fmt.Sprintf("spec.replicas %d → %d", replicas, replicas-1))
	p.Expect(fmt.Sprintf("the operator picks %s as the scale-down victim: remove-first outranks every member but one never added to etcd (docs/lifecycle.md)", member))
	p.Expect(fmt.Sprintf("if %s leads, it moves leadership to a healthy voter first", member))
	p.Expect(fmt.Sprintf("it removes %s from etcd once its quorum gate allows it (Progressing=True/WaitingForHealthyMembers while not), then deletes the EtcdMember and its PVC", member))
	return p
}

// checkVictim runs the operator's victim ranking over the members with member annotated
// remove-first, as the apply leaves them: the plan only holds if the operator removes member.
// Another member annotated remove-first is refused too: among several, the ranking decides by
// facts (the leader) that only etcd knows.
func checkVictim(p *mutation.Plan, sc *membership.Scope, member string) bool {
	var running []membership.Member
	for i := range sc.Members {
		if sc.Members[i].Name == member {
			sc.Members[i].RemoveFirst = true
		}
		if sc.Members[i].Running() {
			running = append(running, sc.Members[i])
		}
	}
	for _, m := range running {
		if m.Name != member && m.RemoveFirst {
			p.Check(RuleVictim, false, fmt.Sprintf("%s is annotated %s too, and the operator's ranking decides among annotated members; remove its annotation first (kubectl annotate etcdmember %s %s-)",
				m.Name, etcdv1alpha2.AnnotationRemoveFirst, m.Name, etcdv1alpha2.AnnotationRemoveFirst))
			return false
		}
	}
	if first := membership.RankVictims(sc, running)[0]; first.Name != member {
		p.Check(RuleVictim, false, fmt.Sprintf("the operator would remove %s first: it was never added to etcd, which outranks remove-first; wait until it has joined", first.Name))
		return false
	}
	p.Check(RuleVictim, true, fmt.Sprintf("the operator's ranking picks %s", member))
	return true
}

// apply annotates the member first, so that the operator never sees the lower count without
// the annotation that names its victim. Both patches carry an optimistic lock: a cluster or a
// member changed since the plan was computed is not patched.
func apply(ctx context.Context, k client.Client, c *etcdv1alpha2.EtcdCluster, m *etcdv1alpha2.EtcdMember, replicas int32) error {
	if _, ok := m.Annotations[etcdv1alpha2.AnnotationRemoveFirst]; !ok {
		before := m.DeepCopy()
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[etcdv1alpha2.AnnotationRemoveFirst] = annotationValue
		if err := k.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching EtcdMember %s/%s: %w", m.Namespace, m.Name, err)
		}
	}
	before := c.DeepCopy()
	c.Spec.Replicas = ptr.To(replicas)
	if err := k.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching EtcdCluster %s/%s (EtcdMember %s keeps its %s annotation, which does nothing until the next scale-down): %w",
			c.Namespace, c.Name, m.Name, etcdv1alpha2.AnnotationRemoveFirst, err)
	}
	return nil
}

// removed is true once member is gone and the cluster is Available with replicas Ready
// members. It fails when the operator removed another member instead.
func removed(s *clusterread.State, member string, replicas int32) (bool, string, error) {
	m, present := gate.Find(s, member)
	if present && m.Annotations[etcdv1alpha2.AnnotationRemovalReason] == "" {
		for _, o := range s.Members {
			if o.Annotations[etcdv1alpha2.AnnotationRemovalReason] == membership.RemovalReasonScaleDown {
				return false, "", fmt.Errorf("the operator is removing %s instead of %s; see kubectl etcd status %s", o.Name, member, s.Cluster.Name)
			}
		}
	}
	c := s.Cluster
	cond, _ := clusterread.Condition(c, etcdv1alpha2.ConditionAvailable)
	progress := fmt.Sprintf("%d of %d members ready, Available=%s/%s", c.Status.ReadyMembers, replicas, cond.Status, cond.Reason)
	if present {
		if p, ok := clusterread.Condition(c, etcdv1alpha2.ConditionProgressing); ok && p.Status == "True" {
			return false, fmt.Sprintf("%s is still a member; %s: %s", member, p.Reason, p.Message), nil
		}
		return false, member + " is still a member; " + progress, nil
	}
	done := cond.Status == "True" && c.Status.ReadyMembers >= replicas && len(s.Members) == int(replicas)
	return done, member + " is gone; " + progress, nil
}
