// Package defrag is `kubectl etcd defrag`: it creates an EtcdDefrag, a run the operator carries
// out one member at a time, followers first and the leader last, each only when the quorum can
// spare it, while the cluster controller holds its own steps (docs/defrag.md). The plugin never
// calls Defragment itself: a defragmentation blocks its member, and only the operator knows what
// else is about to disrupt the cluster. The one exception is compatibility mode (--pod, pod.go),
// which reaches a Pod no EtcdCluster may manage and defragments its member directly, under the
// quorum-margin rule of docs/kubectl-etcd.md, "Compatibility mode (--pod)".
package defrag

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/follow"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	operatordefrag "github.com/etcd-operator/etcd-operator/internal/defrag"
)

// Options are the command's arguments.
type Options struct {
	Cluster string
	// Member is refused: an EtcdDefrag has no member selector (see Run).
	Member string
	// Rule is spec.rule; nil for the API's default.
	Rule *etcdv1alpha2.DefragRule
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	var o Options
	var rule string
	cmd := &cobra.Command{
		Use:   "defrag (CLUSTER [--rule all|free-space=Q|quota-usage=P%[,min-reclaim=Q]] | --pod POD)",
		Short: "Have the operator defragment the members that need it (creates an EtcdDefrag)",
		Long: `defrag creates an EtcdDefrag run. The operator defragments one member at a time, followers
first and the leader last (after moving leadership away), each only while the rest of the cluster
keeps its quorum, and holds its own roll and membership steps meanwhile. --rule says which members
qualify: by default those with more than 200Mi to reclaim; while a NOSPACE alarm is active, every
member with anything to reclaim. The plan previews what the rule selects now. --wait follows the
run to Complete or Failed.

With --pod (compatibility mode, for a Pod no EtcdCluster manages), the plugin defragments that
Pod's member itself, and refuses a voter whose stall would leave its cluster without quorum
(the other voters count as healthy only by their Ready Pods; a single voter is refused) and the
leader (move leadership away first).`,
		Example: `  kubectl etcd defrag demo                                      # show the plan and the members it selects
  kubectl etcd defrag demo --rule all --apply --wait
  kubectl etcd defrag demo --rule quota-usage=70%,min-reclaim=64Mi --apply --yes
  kubectl etcd defrag --pod old-1                               # plan a direct defrag of the member in Pod old-1`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := ParseRule(rule)
			if err != nil {
				return err
			}
			d, err := deps()
			if err != nil {
				return err
			}
			o.Cluster, o.Rule = invocation.Cluster(args), r
			if d.Globals.PodMode() {
				return RunPod(cmd.Context(), o, d)
			}
			return Run(cmd.Context(), o, d)
		},
	}
	cmd.Flags().StringVar(&rule, "rule", "", "which members qualify: all, or free-space=Q, quota-usage=P% and min-reclaim=Q joined by commas (default: free-space=200Mi)")
	cmd.Flags().StringVar(&o.Member, "member", "", "not supported: an EtcdDefrag run covers every member its --rule selects")
	invocation.AcceptPod(cmd)
	return cmd
}

// Run plans the run, and creates it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	if o.Member != "" {
		// EtcdDefragSpec has clusterRef, rule and ttlSecondsAfterFinished only
		// (docs/api.md, "EtcdDefrag"); defragmenting one member behind the operator's back
		// could take it down while a roll restarts another.
		return invocation.Usagef("--member: an EtcdDefrag has no member selector; a run covers every member its --rule selects (--rule all for every member), in the operator's safe order")
	}
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{})
	if err != nil {
		return err
	}
	var runs etcdv1alpha2.EtcdDefragList
	if err := d.Kube.List(ctx, &runs, client.InNamespace(d.Namespace)); err != nil {
		return fmt.Errorf("listing the EtcdDefrags of namespace %s: %w", d.Namespace, err)
	}
	now := d.Clock.Now()
	run := Build(s.Cluster, o.Rule, now)
	preview, why := preview(ctx, d, o)
	p := Plan(s.Cluster, run, runs.Items, preview, why)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		if err := d.Kube.Create(ctx, run); err != nil {
			return fmt.Errorf("creating EtcdDefrag %s/%s: %w", run.Namespace, run.Name, err)
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Created EtcdDefrag %s/%s.\n", run.Namespace, run.Name)
		if !d.Globals.Wait {
			_, _ = fmt.Fprintf(d.ErrOut, "Follow it with: kubectl get etcddefrag -n %s %s -w\n", run.Namespace, run.Name)
			return nil
		}
		return wait(ctx, d, run, len(preview))
	})
}

// preview reads etcd, unless --no-etcd, to show what the rule selects now. It is a help only:
// without access to etcd the plan still stands, since the operator evaluates the rule itself.
func preview(ctx context.Context, d *invocation.Deps, o Options) ([]etcdv1alpha2.DefragMemberStatus, string) {
	if d.Globals.NoEtcd {
		return nil, "--no-etcd"
	}
	obs, sess, err := etcdobserve.Read(ctx, d, o.Cluster)
	if err != nil {
		return nil, err.Error()
	}
	defer func() { _ = sess.Close() }()
	return Preview(obs, o.Rule, d.Clock.Now()), ""
}

// wait follows run until it is final, for as long as the operator's own deadline could take
// (5 minutes per member, docs/defrag.md) plus a queueing allowance.
func wait(ctx context.Context, d *invocation.Deps, run *etcdv1alpha2.EtcdDefrag, members int) error {
	ctx, cancel := context.WithTimeout(ctx, follow.MaxWait+operatordefrag.MemberTimeout*time.Duration(members))
	defer cancel()
	var last etcdv1alpha2.EtcdDefrag
	err := follow.Poll(ctx, d, func(ctx context.Context) (follow.Observed, error) {
		if err := d.Kube.Get(ctx, client.ObjectKeyFromObject(run), &last); err != nil {
			return follow.Observed{}, fmt.Errorf("reading EtcdDefrag %s/%s: %w", run.Namespace, run.Name, err)
		}
		return follow.Observed{
			Finished:    operatordefrag.Final(last.Status.Phase),
			Progress:    Progress(&last),
			EventsAbout: []string{run.Name, run.Spec.ClusterRef.Name},
		}, nil
	})
	if err != nil {
		return err
	}
	if last.Status.Phase == etcdv1alpha2.DefragPhaseFailed {
		return fmt.Errorf("EtcdDefrag %s/%s failed: %s", run.Namespace, run.Name, readyMessage(&last))
	}
	return nil
}

// Progress is one line on where run is.
func Progress(run *etcdv1alpha2.EtcdDefrag) string {
	line := fmt.Sprintf("EtcdDefrag %s %s", run.Name, phaseOf(*run))
	if run.Status.Phase == "" {
		line += " (the operator has not picked it up yet)"
	}
	if ms := run.Status.Members; len(ms) > 0 {
		n := map[etcdv1alpha2.DefragOutcome]int{}
		for _, m := range ms {
			n[m.Outcome]++
		}
		line += fmt.Sprintf(", members: %d defragmented, %d pending, %d failed, %d skipped",
			n[etcdv1alpha2.DefragOutcomeDefragmented], n[etcdv1alpha2.DefragOutcomePending], n[etcdv1alpha2.DefragOutcomeFailed], n[etcdv1alpha2.DefragOutcomeSkipped])
	}
	if msg := readyMessage(run); msg != "" {
		line += ": " + msg
	}
	return line
}

func readyMessage(run *etcdv1alpha2.EtcdDefrag) string {
	c := meta.FindStatusCondition(run.Status.Conditions, etcdv1alpha2.ConditionReady)
	if c == nil {
		return ""
	}
	return c.Reason + ", " + c.Message
}
