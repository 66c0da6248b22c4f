// Package replacemember is `kubectl etcd replace-member`: it annotates the member replace with
// a reason, and the operator replaces it through the same quorum-gated flow as a failed member:
// it removes the member first, then adds a fresh one (docs/failure-modes.md, "Replacing a member
// by hand"). The member count never changes.
package replacemember

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/follow"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/gate"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
)

// RuleAlreadyRequested reports a member that already carries the same replace annotation.
const RuleAlreadyRequested = "already-requested"

// DefaultReason is the annotation's value without --reason; the operator quotes it in
// Progressing.
const DefaultReason = "requested with kubectl etcd replace-member"

// Options are the command's arguments.
type Options struct {
	Cluster, Member string
	// Reason is the replace annotation's value.
	Reason string
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	o := Options{Reason: DefaultReason}
	cmd := &cobra.Command{
		Use:   "replace-member CLUSTER MEMBER [--reason TEXT]",
		Short: "Replace a member with a fresh one (new name, member ID and volume)",
		Long: `replace-member annotates MEMBER with etcd-operator.cozystack.io/replace=<reason>. The operator then
replaces it as it replaces a failed member: it moves leadership away if the member leads,
removes it from etcd once its quorum gate allows it, deletes its EtcdMember and PVC, and adds a
fresh member in its place, as a learner first. The member count stays the same.

The removal comes first, so the plan runs the operator's quorum gate on removing MEMBER over the
members' health as the operator last reported it.`,
		Example: `  kubectl etcd replace-member demo demo-x7k2p --reason "disk errors on node-c"
  kubectl etcd replace-member demo demo-x7k2p --reason "disk errors on node-c" --apply --wait`,
		Args: invocation.ExactArgs("CLUSTER", "MEMBER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			o.Cluster, o.Member = args[0], args[1]
			return Run(cmd.Context(), o, d)
		},
	}
	cmd.Flags().StringVar(&o.Reason, "reason", o.Reason, "why, recorded in the annotation and quoted by the operator in Progressing")
	return cmd
}

// Run plans the replacement, and applies it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{Pods: true})
	if err != nil {
		return err
	}
	p := Plan(s, o.Member, o.Reason)
	before := memberNames(s)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		m, _ := gate.Find(s, o.Member)
		if err := apply(ctx, d.Kube, m, o.Reason); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Asked the operator to replace %s (%s=%q).\n", o.Member, etcdv1alpha2.AnnotationReplace, o.Reason)
		if !d.Globals.Wait {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, follow.MaxWait)
		defer cancel()
		return follow.Until(ctx, d, o.Cluster, clusterread.Options{}, func(s *clusterread.State) (bool, string, error) {
			return replaced(s, o.Member, before)
		})
	})
}

// Plan decides what replacing member of the cluster s shows takes.
func Plan(s *clusterread.State, member, reason string) *mutation.Plan {
	c := s.Cluster
	p := mutation.New("replace-member", c.Namespace, c.Name)
	m := gate.CheckMember(p, s, member)
	if m == nil || !gate.CheckNotPaused(p, c) || !gate.CheckNotLeaving(p, m) {
		return p
	}
	// The operator removes the member before it adds its successor (internal/membership,
	// replace), so the removal is what the gate must allow.
	if !gate.CheckRemoval(p, gate.Scope(s), m) {
		return p
	}
	target := "EtcdMember " + c.Namespace + "/" + member
	switch old, ok := m.Annotations[etcdv1alpha2.AnnotationReplace]; {
	case ok && old == reason:
		p.Check(RuleAlreadyRequested, true, fmt.Sprintf("%s is already annotated %s=%q; the operator replaces it when its turn comes", member, etcdv1alpha2.AnnotationReplace, reason))
		return p
	case ok:
		p.Step("patch", target, fmt.Sprintf("annotate %s=%q (was %q)", etcdv1alpha2.AnnotationReplace, reason, old))
	default:
		p.Step("patch", target, fmt.Sprintf("annotate %s=%q", etcdv1alpha2.AnnotationReplace, reason))
	}
	if others := othersLeaving(s, member); len(others) > 0 {
		p.Expect(fmt.Sprintf("the operator replaces one member at a time: %s goes first, %s waits", others[0], member))
	}
	p.Expect(fmt.Sprintf("the operator moves leadership away if %s leads", member))
	p.Expect(fmt.Sprintf("it removes %s from etcd once its quorum gate allows it (removal-reason Replace, your reason quoted in Progressing), then deletes the EtcdMember and its PVC", member))
	p.Expect(fmt.Sprintf("a fresh member (new name, member ID and PVC) takes its place, added as a learner and promoted: %d members again", clusterread.Replicas(c)))
	return p
}

// othersLeaving names the other members the operator removes or replaces before member.
func othersLeaving(s *clusterread.State, member string) []string {
	var out []string
	for _, m := range s.Members {
		_, replace := m.Annotations[etcdv1alpha2.AnnotationReplace]
		if m.Name != member && (replace || m.Annotations[etcdv1alpha2.AnnotationRemovalReason] != "") {
			out = append(out, m.Name)
		}
	}
	return out
}

// apply writes the annotation with an optimistic lock: a member changed since the plan was
// computed is not patched.
func apply(ctx context.Context, k client.Client, m *etcdv1alpha2.EtcdMember, reason string) error {
	before := m.DeepCopy()
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[etcdv1alpha2.AnnotationReplace] = reason
	if err := k.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching EtcdMember %s/%s: %w", m.Namespace, m.Name, err)
	}
	return nil
}

func memberNames(s *clusterread.State) []string {
	out := make([]string, 0, len(s.Members))
	for _, m := range s.Members {
		out = append(out, m.Name)
	}
	return out
}

// replaced is true once member is gone, a member that was not there before took its place,
// and the cluster is Available with every member Ready.
func replaced(s *clusterread.State, member string, before []string) (bool, string, error) {
	c := s.Cluster
	replicas := clusterread.Replicas(c)
	if _, present := gate.Find(s, member); present {
		if p, ok := clusterread.Condition(c, etcdv1alpha2.ConditionProgressing); ok && p.Status == "True" {
			return false, fmt.Sprintf("%s is still a member; %s: %s", member, p.Reason, p.Message), nil
		}
		return false, member + " is still a member; waiting for the operator", nil
	}
	var fresh []string
	for _, m := range s.Members {
		if !slices.Contains(before, m.Name) {
			fresh = append(fresh, m.Name)
		}
	}
	cond, _ := clusterread.Condition(c, etcdv1alpha2.ConditionAvailable)
	progress := fmt.Sprintf("%d of %d members ready, Available=%s/%s", c.Status.ReadyMembers, replicas, cond.Status, cond.Reason)
	if len(fresh) == 0 {
		return false, member + " is gone; waiting for its successor; " + progress, nil
	}
	done := cond.Status == "True" && c.Status.ReadyMembers >= replicas && len(s.Members) == int(replicas)
	return done, fmt.Sprintf("%s is gone, replaced by %s; %s", member, fresh[0], progress), nil
}
