// Package members is `kubectl etcd members`: etcd's member list joined with the cluster's
// EtcdMembers, so that a member only one side knows (an orphan) stands out
// (docs/kubectl-etcd.md, "members").
package members

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
)

// Options are the command's arguments.
type Options struct {
	Cluster string
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "members (CLUSTER | --pod POD)",
		Short: "List etcd's members next to their EtcdMembers, flagging orphans",
		Long: `members joins etcd's member list with the cluster's EtcdMembers, the way the operator
pairs them (same peer URL, or same name once started), and shows each member's ID, etcd name,
peer and client URLs, whether it is a learner, its EtcdMember and its PVC. An etcd member no
EtcdMember is, and an EtcdMember whose member ID etcd does not list, are flagged as orphans.

--no-etcd shows the EtcdMembers' side only. --pod (compatibility mode) shows etcd's member
list only, through one Pod, next to the Pods named like the members.`,
		Example: `  kubectl etcd members demo
  kubectl etcd members demo -o json | jq '.members[] | select(.orphan)'
  kubectl etcd members --pod old-0        # etcd's list through one Pod, e.g. a legacy member`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			if d.Globals.PodMode() {
				return RunPod(cmd.Context(), d)
			}
			return Run(cmd.Context(), Options{Cluster: invocation.Cluster(args)}, d)
		},
	}
	invocation.AcceptPod(cmd)
	return cmd
}

// Run prints the joined list. Without etcd's list (unreachable, or MemberList failed) it prints
// the EtcdMembers' side and fails (exit 1): the list is what the command is for.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{Pods: true})
	if err != nil {
		return err
	}
	r := etcdread.NewReader(d)
	defer r.Close()
	v := r.Read(ctx, s, etcdread.What{})
	rep := Build(s, v)
	if err := printer.Print(d.Out, d.Globals.Output, rep, rep.Text); err != nil {
		return err
	}
	if v.State == etcdread.StateUnreachable || (v.Reached() && v.MembersErr != nil) {
		return fmt.Errorf("%s; only the EtcdMembers were shown (use --no-etcd to skip etcd on purpose)", strings.Join(v.Errors(), "; "))
	}
	return nil
}
