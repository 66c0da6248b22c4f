// Package retry is `kubectl etcd retry`: it sets status.progressDeadline to now, so that the
// operator adopts a pending spec at once instead of waiting out the deadline it set for the
// previous change (docs/lifecycle.md).
package retry

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/follow"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
)

// RulePending is the check that a spec change is waiting.
const RulePending = "spec-pending"

// Options are the command's arguments.
type Options struct {
	Cluster string
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "retry CLUSTER",
		Short: "Adopt a pending spec change now instead of at the progress deadline",
		Long: `While a change is in progress, the operator adopts a newer spec only once the change
finishes or its progress deadline passes. retry moves status.progressDeadline to now, so the
pending generation is adopted on the next pass.`,
		Example: `  kubectl etcd retry demo --apply --wait`,
		Args:    invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			return Run(cmd.Context(), Options{Cluster: args[0]}, d)
		},
	}
}

// Run plans the retry, and applies it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{})
	if err != nil {
		return err
	}
	now := d.Clock.Now()
	p := Plan(s.Cluster, now)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		if err := apply(ctx, d.Kube, s.Cluster, now); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Moved the progress deadline of %s to now.\n", p.Cluster)
		if !d.Globals.Wait {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, follow.MaxWait)
		defer cancel()
		return follow.Until(ctx, d, o.Cluster, clusterread.Options{}, adopted)
	})
}

// Plan decides what retrying c takes at now.
func Plan(c *etcdv1alpha2.EtcdCluster, now time.Time) *mutation.Plan {
	p := mutation.New("retry", c.Namespace, c.Name)
	if c.Status.ObservedGeneration >= c.Generation {
		p.Check(RulePending, true, fmt.Sprintf("nothing is pending: generation %d is adopted", c.Generation))
		return p
	}
	p.Check(RulePending, true, fmt.Sprintf("generation %d is pending; %d is adopted", c.Generation, c.Status.ObservedGeneration))
	from := "unset"
	if d := c.Status.ProgressDeadline; d != nil {
		from = d.UTC().Format(time.RFC3339)
	}
	p.Step("patch", "EtcdCluster "+p.Cluster+" status", fmt.Sprintf("progressDeadline %s → %s", from, now.UTC().Format(time.RFC3339)))
	return p
}

func apply(ctx context.Context, k client.Client, c *etcdv1alpha2.EtcdCluster, now time.Time) error {
	before := c.DeepCopy()
	c.Status.ProgressDeadline = &metav1.Time{Time: now}
	if err := k.Status().Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching the status of EtcdCluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

func adopted(s *clusterread.State) (bool, string, error) {
	c := s.Cluster
	if c.Status.ObservedGeneration >= c.Generation {
		return true, fmt.Sprintf("generation %d adopted", c.Generation), nil
	}
	return false, fmt.Sprintf("generation %d pending, %d adopted", c.Generation, c.Status.ObservedGeneration), nil
}
