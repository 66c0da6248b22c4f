// Package compact is `kubectl etcd compact`: it discards etcd's key history before a revision,
// the first step of freeing space (docs/defrag.md, "Recovering from NOSPACE"). Compaction
// frees pages inside the database file; only a defragmentation gives them back to the disk.
package compact

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
)

// RuleRevisionRange refuses a revision that is not positive or is above the current one.
const RuleRevisionRange = "revision-range"

// Options are the command's arguments.
type Options struct {
	Cluster string
	// Revision, when set, is the revision to compact to; else the current one.
	Revision *int64
	// Physical waits until the compaction is applied to the backend.
	Physical bool
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	var o Options
	var rev int64
	cmd := &cobra.Command{
		Use:   "compact (CLUSTER | --pod POD) [--revision R] [--physical]",
		Short: "Discard the key history before the current revision (or R)",
		Long: `compact discards every key version older than the target revision, the current one unless
--revision says otherwise; watches and reads at older revisions fail afterwards. It works while a
NOSPACE alarm is active. The database file keeps its size until a defrag.

With --pod, the compaction goes through that one Pod's etcd (compatibility mode); the current
revision is the one that Pod answers with.`,
		Example: `  kubectl etcd compact demo                           # show the plan
  kubectl etcd compact demo --apply --yes
  kubectl etcd compact demo --revision 48210 --physical --apply
  kubectl etcd compact --pod old-0 --apply --yes              # a Pod no EtcdCluster manages`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			o.Cluster = invocation.Cluster(args)
			if cmd.Flags().Changed("revision") {
				o.Revision = &rev
			}
			return Run(cmd.Context(), o, d)
		},
	}
	cmd.Flags().Int64Var(&rev, "revision", 0, "revision to compact to (default: the current revision)")
	cmd.Flags().BoolVar(&o.Physical, "physical", false, "return only once the compaction is applied to the backend database")
	invocation.AcceptPod(cmd)
	return cmd
}

// Run plans the compaction, and applies it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	obs, sess, err := etcdobserve.Read(ctx, d, o.Cluster)
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	current, err := CurrentRevision(obs)
	if err != nil {
		return err
	}
	p, target := Plan(obs.State.Cluster, current, o)
	obs.Mark(p)
	next := "kubectl etcd defrag " + obs.State.Cluster.Name
	if obs.Pod != nil {
		next = "kubectl etcd defrag --pod POD on each member"
	}
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, d.Globals.Timeout)
		defer cancel()
		if err := sess.Compact(cctx, target, o.Physical); err != nil {
			return fmt.Errorf("compacting %s to revision %d: %w", p.Cluster, target, err)
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Compacted %s to revision %d. Run %s to give the freed space back to the disk.\n", p.Cluster, target, next)
		return nil
	})
}

// CurrentRevision is the leader's revision, else the highest a member answered: a follower's
// may trail the leader's by the writes it has not applied yet.
func CurrentRevision(obs *etcdobserve.Observation) (int64, error) {
	if l := obs.Leader(); l != nil && l.Status != nil {
		return l.Status.Revision, nil
	}
	var rev int64
	for _, m := range obs.Members {
		if m.Status != nil {
			rev = max(rev, m.Status.Revision)
		}
	}
	if rev == 0 {
		return 0, errors.New("no member answered Status, so the current revision is unknown")
	}
	return rev, nil
}

// Plan decides the target revision of compacting c at current.
func Plan(c *etcdv1alpha2.EtcdCluster, current int64, o Options) (*mutation.Plan, int64) {
	p := mutation.New("compact", c.Namespace, c.Name)
	target := current
	if o.Revision != nil {
		target = *o.Revision
	}
	switch {
	case target <= 0:
		p.Check(RuleRevisionRange, false, fmt.Sprintf("revision %d is not a revision: etcd's revisions start at 1 (current revision %d)", target, current))
		return p, 0
	case target > current:
		p.Check(RuleRevisionRange, false, fmt.Sprintf("revision %d is above the current revision %d; etcd cannot compact the future", target, current))
		return p, 0
	}
	p.Check(RuleRevisionRange, true, fmt.Sprintf("revision %d is at or below the current revision %d", target, current))
	change := fmt.Sprintf("discard key history before revision %d (current revision %d)", target, current)
	if o.Physical {
		change += ", waiting until the backend has applied it"
	}
	p.Step("call", "etcd Compact", change)
	return p, target
}
