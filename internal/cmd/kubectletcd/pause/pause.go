// Package pause is `kubectl etcd pause`: it records the replica count in the paused-replicas
// annotation and sets spec.replicas to 0, so that resume can bring the same members back
// (docs/lifecycle.md, "Pause and resume").
package pause

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/follow"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// Rules this command checks.
const (
	RuleMemoryCluster = "memory-cluster-pause"
	RuleAlreadyPaused = "already-paused"
)

// Options are the command's arguments.
type Options struct {
	Cluster string
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "pause CLUSTER",
		Short: "Stop every member, keeping their data and IDs for resume",
		Long: `pause records spec.replicas in the paused-replicas annotation and sets spec.replicas to 0.
The operator deletes the member Pods and keeps their PVCs and etcd member IDs; resume brings
the same members back. Memory clusters cannot be paused: their data lives in the Pods.`,
		Example: `  kubectl etcd pause demo                     # show the plan
  kubectl etcd pause demo --apply --wait      # pause and follow until every Pod is gone`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			return Run(cmd.Context(), Options{Cluster: args[0]}, d)
		},
	}
}

// Run plans the pause, and applies it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{})
	if err != nil {
		return err
	}
	p := Plan(s.Cluster)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		if err := apply(ctx, d.Kube, s.Cluster); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Paused %s: the operator now stops its members.\n", p.Cluster)
		if !d.Globals.Wait {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, follow.MaxWait)
		defer cancel()
		return follow.Until(ctx, d, o.Cluster, clusterread.Options{Pods: true}, paused)
	})
}

// Plan decides what pausing c takes.
func Plan(c *etcdv1alpha2.EtcdCluster) *mutation.Plan {
	p := mutation.New("pause", c.Namespace, c.Name)
	if c.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		p.Check(RuleMemoryCluster, false, "a Memory cluster keeps its data in its Pods, so pausing it would lose every key; delete and recreate it instead")
		return p
	}
	replicas := clusterread.Replicas(c)
	if replicas == 0 {
		p.Check(RuleAlreadyPaused, true, "spec.replicas is already 0")
		return p
	}
	p.Check(RuleMemoryCluster, true, "the members' data is on PVCs, which pause keeps")
	p.Step("patch", "EtcdCluster "+p.Cluster, fmt.Sprintf("annotate %s=%d, spec.replicas %d → 0", etcdv1alpha2.AnnotationPausedReplicas, replicas, replicas))
	return p
}

func apply(ctx context.Context, k client.Client, c *etcdv1alpha2.EtcdCluster) error {
	before := c.DeepCopy()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[etcdv1alpha2.AnnotationPausedReplicas] = strconv.Itoa(int(clusterread.Replicas(c)))
	c.Spec.Replicas = ptr.To[int32](0)
	// The optimistic lock refuses the patch if someone changed the cluster since it was read,
	// so the annotation never records a replica count the plan did not show.
	if err := k.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching EtcdCluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// paused is true once the operator reports Available=False/Paused and no member Pod is left.
func paused(s *clusterread.State) (bool, string, error) {
	if n := len(s.Pods); n > 0 {
		return false, fmt.Sprintf("%d member Pods still run", n), nil
	}
	if c, ok := clusterread.Condition(s.Cluster, etcdv1alpha2.ConditionAvailable); !ok || c.Reason != membership.ReasonPaused {
		return false, "every member Pod is gone; waiting for the operator to report the cluster paused", nil
	}
	return true, "paused: the dormant member's PVC and member ID are kept for resume", nil
}
