// Package resume is `kubectl etcd resume`: it sets spec.replicas back to the count pause
// recorded (or --replicas) and removes the paused-replicas annotation; the operator wakes the
// dormant member with its data and member ID and adds the rest (docs/lifecycle.md, "Pause and
// resume").
package resume

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
)

// Rules this command checks.
const (
	RuleNotPaused     = "not-paused"
	RuleReplicasKnown = "replicas-known"
	RuleReplicasRange = "replicas-range"
)

// maxReplicas is the API's bound on spec.replicas.
const maxReplicas = 7

// Options are the command's arguments.
type Options struct {
	Cluster string
	// Replicas, when positive, overrides the recorded count.
	Replicas int32
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use:   "resume CLUSTER [--replicas N]",
		Short: "Wake a paused cluster with the same members, data and IDs",
		Long: `resume sets spec.replicas back to the count that pause recorded in the paused-replicas
annotation (or to --replicas) and removes the annotation. The operator starts the dormant member
with its data and member ID, then adds the other members one at a time.`,
		Example: `  kubectl etcd resume demo --apply --wait
  kubectl etcd resume demo --replicas 5 --apply --yes`,
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
	cmd.Flags().Int32Var(&o.Replicas, "replicas", 0, "replicas to resume with, instead of the count pause recorded")
	return cmd
}

// Run plans the resume, and applies it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{})
	if err != nil {
		return err
	}
	p, replicas := Plan(s.Cluster, o.Replicas)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		if err := apply(ctx, d.Kube, s.Cluster, replicas); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Resuming %s with %d replicas.\n", p.Cluster, replicas)
		if !d.Globals.Wait {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, follow.MaxWait)
		defer cancel()
		return follow.Until(ctx, d, o.Cluster, clusterread.Options{}, func(s *clusterread.State) (bool, string, error) {
			return available(s, replicas)
		})
	})
}

// Plan decides what resuming c takes, and the replica count it resumes with.
func Plan(c *etcdv1alpha2.EtcdCluster, override int32) (*mutation.Plan, int32) {
	p := mutation.New("resume", c.Namespace, c.Name)
	if r := clusterread.Replicas(c); r != 0 {
		p.Check(RuleNotPaused, false, fmt.Sprintf("the cluster is not paused: spec.replicas is %d", r))
		return p, 0
	}
	recorded, hasRecord := c.Annotations[etcdv1alpha2.AnnotationPausedReplicas]
	replicas := override
	if replicas <= 0 {
		n, err := strconv.ParseInt(recorded, 10, 32)
		if !hasRecord || err != nil || n <= 0 {
			p.Check(RuleReplicasKnown, false, fmt.Sprintf("the %s annotation is missing or not a positive number (%q); give --replicas N", etcdv1alpha2.AnnotationPausedReplicas, recorded))
			return p, 0
		}
		replicas = int32(n)
	}
	if replicas > maxReplicas {
		p.Check(RuleReplicasRange, false, fmt.Sprintf("%d replicas is more than the API's maximum of %d", replicas, maxReplicas))
		return p, 0
	}
	p.Check(RuleReplicasKnown, true, fmt.Sprintf("resuming with %d replicas", replicas))
	change := fmt.Sprintf("spec.replicas 0 → %d", replicas)
	if hasRecord {
		change += ", remove annotation " + etcdv1alpha2.AnnotationPausedReplicas
	}
	p.Step("patch", "EtcdCluster "+p.Cluster, change)
	return p, replicas
}

func apply(ctx context.Context, k client.Client, c *etcdv1alpha2.EtcdCluster, replicas int32) error {
	before := c.DeepCopy()
	delete(c.Annotations, etcdv1alpha2.AnnotationPausedReplicas)
	c.Spec.Replicas = ptr.To(replicas)
	if err := k.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching EtcdCluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// available is true once every wanted member is Ready and the cluster Available.
func available(s *clusterread.State, replicas int32) (bool, string, error) {
	c := s.Cluster
	progress := fmt.Sprintf("%d of %d members ready", c.Status.ReadyMembers, replicas)
	cond, ok := clusterread.Condition(c, etcdv1alpha2.ConditionAvailable)
	if ok {
		progress += fmt.Sprintf(", Available=%s/%s", cond.Status, cond.Reason)
	}
	return ok && cond.Status == "True" && c.Status.ReadyMembers >= replicas, progress, nil
}
