// Package recovery is `kubectl etcd recover`: for a cluster that lost its quorum, it shows the
// recovery candidate the operator named in its Degraded condition, what a recovery from it
// loses, and with --apply writes the approve-recovery annotation with exactly the value the
// operator asked for (docs/disaster-recovery.md, "When it needs your approval"). The plugin
// computes no candidate of its own: only the operator reads the survivors' logs.
package recovery

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/follow"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/gate"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// Rules this command checks.
const (
	// RuleQuorumLost: the cluster reports Available=False/QuorumLost; with a quorum there is
	// nothing to recover.
	RuleQuorumLost = "quorum-lost"
	// RuleRecoveryRunning: no recovery is recorded in status.quorumRecovery yet.
	RuleRecoveryRunning = "recovery-running"
	// RuleCandidate: the operator names a candidate (and it is --member, when given).
	RuleCandidate = "candidate"
	// RuleApprovalValue: the value names this cluster and the candidate.
	RuleApprovalValue = "approval-value"
	// RuleAlreadyApproved reports an annotation that already holds the value.
	RuleAlreadyApproved = "already-approved"
)

// Options are the command's arguments.
type Options struct {
	Cluster string
	// Member, when set, must be the operator's candidate: a guard against approving a survivor
	// other than the one the person checked.
	Member string
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use:   "recover CLUSTER [--member M]",
		Short: "Approve the operator's quorum-loss recovery from its candidate survivor",
		Long: `When a cluster lost its quorum and the lost members cannot come back, the operator names, after
10 minutes, the answering member with the most up-to-date log and the exact value of the
approve-recovery annotation that approves a recovery from it. recover shows that candidate,
the members a recovery gives up, and what can be lost; with --apply it writes the annotation.

The operator then stops the other members, restarts the candidate's etcd once with
--force-new-cluster (it keeps its member ID and data), removes the others and grows back to
spec.replicas. It refuses while the cluster has its quorum and while a recovery runs.`,
		Example: `  kubectl etcd recover demo                                      # show the candidate and what is lost
  kubectl etcd recover demo --member demo-x7k2p --apply --wait   # approve it and follow the recovery`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			o.Cluster = args[0]
			return Run(cmd.Context(), o, d)
		},
	}
	cmd.Flags().StringVar(&o.Member, "member", "", "refuse unless the operator's candidate is this member")
	return cmd
}

// Run plans the approval, and applies it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{})
	if err != nil {
		return err
	}
	p, value := Plan(s, o.Member)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		if err := apply(ctx, d.Kube, s.Cluster, value); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Approved the recovery of %s: %s=%s.\n", p.Cluster, etcdv1alpha2.AnnotationApproveRecovery, value)
		if !d.Globals.Wait {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, follow.MaxWait)
		defer cancel()
		return follow.Until(ctx, d, o.Cluster, clusterread.Options{}, func(s *clusterread.State) (bool, string, error) {
			return recovered(s, value)
		})
	})
}

// Plan decides what approving the recovery of the cluster s shows takes, and the value it
// writes. member, when set, must be the candidate.
func Plan(s *clusterread.State, member string) (*mutation.Plan, string) {
	c := s.Cluster
	p := mutation.New("recover", c.Namespace, c.Name)
	note, ok := checkPending(p, c)
	if !ok || !checkCandidate(p, s, note, member) {
		return p, ""
	}
	if c.Annotations[etcdv1alpha2.AnnotationApproveRecovery] == note.Approval {
		p.Check(RuleAlreadyApproved, true, "the annotation already holds this value; the operator acts on it at its next pass")
		return p, note.Approval
	}
	change := fmt.Sprintf("annotate %s=%s", etcdv1alpha2.AnnotationApproveRecovery, note.Approval)
	if note.Rejected != "" {
		change += fmt.Sprintf(" (was %s, which the operator refused)", note.Rejected)
	}
	p.Step("patch", "EtcdCluster "+p.Cluster, change)
	expect(p, s, note)
	return p, note.Approval
}

// checkPending reads the operator's recovery note: the cluster must have lost its quorum, run
// no recovery yet, and name a candidate.
func checkPending(p *mutation.Plan, c *etcdv1alpha2.EtcdCluster) (membership.RecoveryNote, bool) {
	avail, _ := clusterread.Condition(c, etcdv1alpha2.ConditionAvailable)
	if avail.Reason != membership.ReasonQuorumLost {
		p.Check(RuleQuorumLost, false, fmt.Sprintf("%s does not report a lost quorum (Available=%s/%s: %s): there is nothing to recover",
			c.Name, avail.Status, avail.Reason, avail.Message))
		return membership.RecoveryNote{}, false
	}
	p.Check(RuleQuorumLost, true, "Available=False/QuorumLost: "+avail.Message)
	if r := c.Status.QuorumRecovery; r != nil {
		p.Check(RuleRecoveryRunning, false, fmt.Sprintf("a recovery from %s (%s, last log entry term %d index %d) is already running; follow it with kubectl etcd status %s",
			r.Member, r.Mode, r.Term, r.Index, c.Name))
		return membership.RecoveryNote{}, false
	}
	p.Check(RuleRecoveryRunning, true, "no recovery runs yet")
	degraded, _ := clusterread.Condition(c, etcdv1alpha2.ConditionDegraded)
	note, ok := membership.ParseRecoveryNote(degraded.Message)
	if !ok {
		p.Check(RuleCandidate, false, "the operator names no recovery candidate: "+degraded.Message)
		return note, false
	}
	return note, true
}

// checkCandidate checks the candidate against --member and the value against the cluster.
func checkCandidate(p *mutation.Plan, s *clusterread.State, note membership.RecoveryNote, member string) bool {
	c := s.Cluster
	if member != "" && member != note.Candidate {
		p.Check(RuleCandidate, false, fmt.Sprintf("the operator's candidate is %s, the answering member with the most up-to-date log, not %s; it approves no other", note.Candidate, member))
		return false
	}
	m, isMember := gate.Find(s, note.Candidate)
	if !isMember {
		p.Check(RuleCandidate, false, fmt.Sprintf("the candidate %s is not an EtcdMember of %s any more; run recover again once the operator names another", note.Candidate, c.Name))
		return false
	}
	p.Check(RuleCandidate, true, fmt.Sprintf("the operator names %s (member ID %s), the answering member with the most up-to-date log", note.Candidate, m.Status.MemberID))
	clusterID, valueMember, applied, err := membership.ParseApprovalValue(note.Approval)
	switch {
	case err != nil:
		p.Check(RuleApprovalValue, false, err.Error())
		return false
	case clusterID != c.Status.ClusterID || valueMember != note.Candidate:
		p.Check(RuleApprovalValue, false, fmt.Sprintf("the value %s does not name cluster ID %s and member %s", note.Approval, c.Status.ClusterID, note.Candidate))
		return false
	}
	p.Check(RuleApprovalValue, true, fmt.Sprintf("%s: cluster ID %s, member %s, applied index %d", note.Approval, clusterID, valueMember, applied))
	return true
}

// expect says what the operator does once it sees the value, and what is lost.
func expect(p *mutation.Plan, s *clusterread.State, note membership.RecoveryNote) {
	var others []string
	for _, m := range s.Members {
		if m.Name != note.Candidate {
			others = append(others, m.Name)
		}
	}
	given := "none"
	if len(others) > 0 {
		given = strings.Join(others, ", ")
		p.Expect(fmt.Sprintf("the operator stops %s: their Pods go, their EtcdMembers and PVCs stay until %s serves alone", given, note.Candidate))
	}
	p.Expect(fmt.Sprintf("it restarts the etcd of %s once with --force-new-cluster: it keeps its member ID and data and forms a cluster of one", note.Candidate))
	p.Expect(fmt.Sprintf("it removes %s, then grows back to %d members; a removed member that returns is rejected and replaced", given, clusterread.Replicas(s.Cluster)))
	silent := "the silent voters"
	if len(note.Silent) > 0 {
		silent = strings.Join(note.Silent, ", ")
	}
	kept := "everything it applied"
	if _, _, applied, err := membership.ParseApprovalValue(note.Approval); err == nil {
		kept += fmt.Sprintf(", up to index %d", applied)
	}
	p.Expect(fmt.Sprintf("lost: writes acknowledged by the cluster that only %s had received; %s keeps %s", silent, note.Candidate, kept))
}

// apply writes the annotation with an optimistic lock: a cluster changed since the plan was
// computed is not patched.
func apply(ctx context.Context, k client.Client, c *etcdv1alpha2.EtcdCluster, value string) error {
	before := c.DeepCopy()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[etcdv1alpha2.AnnotationApproveRecovery] = value
	if err := k.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching EtcdCluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// recovered follows status.quorumRecovery: true once the recovery is over (the operator removed
// the annotation) and the cluster is Available again. It fails when the operator refuses value.
func recovered(s *clusterread.State, value string) (bool, string, error) {
	c := s.Cluster
	prog, _ := clusterread.Condition(c, etcdv1alpha2.ConditionProgressing)
	if r := c.Status.QuorumRecovery; r != nil {
		return false, fmt.Sprintf("recovering from %s (%s): %s", r.Member, r.Mode, prog.Message), nil
	}
	degraded, _ := clusterread.Condition(c, etcdv1alpha2.ConditionDegraded)
	if n, ok := membership.ParseRecoveryNote(degraded.Message); ok && n.Rejected == value {
		return false, "", fmt.Errorf("the operator refused the approval: %s; run kubectl etcd recover %s again", degraded.Message, c.Name)
	}
	avail, _ := clusterread.Condition(c, etcdv1alpha2.ConditionAvailable)
	state := fmt.Sprintf("Available=%s/%s, %d of %d members ready", avail.Status, avail.Reason, c.Status.ReadyMembers, clusterread.Replicas(c))
	if c.Annotations[etcdv1alpha2.AnnotationApproveRecovery] != "" {
		return false, "waiting for the operator to start the recovery; " + state, nil
	}
	if avail.Status != "True" {
		return false, "recovered; growing back: " + state, nil
	}
	return true, "recovered: " + state, nil
}
