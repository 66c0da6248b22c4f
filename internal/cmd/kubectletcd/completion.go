package kubectletcd

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

// completeClusterNames gives every command whose first argument is CLUSTER shell completion of
// the EtcdClusters in the namespace (then of the cluster's members for a MEMBER argument), so
// that `kubectl etcd status <TAB>` works as kubectl's own completion does.
func completeClusterNames(c *cobra.Command, deps invocation.Factory) {
	for _, sub := range c.Commands() {
		completeClusterNames(sub, deps)
	}
	args := strings.Fields(c.Use)
	// "status (CLUSTER | --pod POD)": a command that accepts --pod still takes CLUSTER first.
	if c.ValidArgsFunction != nil || len(args) < 2 || strings.TrimPrefix(args[1], "(") != "CLUSTER" {
		return
	}
	next := ""
	if len(args) > 2 {
		next = args[2]
	}
	c.ValidArgsFunction = func(cmd *cobra.Command, given []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch {
		case len(given) == 1 && next == "FILE":
			return nil, cobra.ShellCompDirectiveDefault
		case len(given) > 1 || (len(given) == 1 && next != "MEMBER"):
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		d, err := deps()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		if len(given) == 0 {
			var list etcdv1alpha2.EtcdClusterList
			if err := d.Kube.List(cmd.Context(), &list, client.InNamespace(d.Namespace)); err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			names := make([]cobra.Completion, 0, len(list.Items))
			for _, ec := range list.Items {
				names = append(names, ec.Name)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		}
		var members etcdv1alpha2.EtcdMemberList
		if err := d.Kube.List(cmd.Context(), &members, client.InNamespace(d.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: given[0]}); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names := make([]cobra.Completion, 0, len(members.Items))
		for _, m := range members.Items {
			names = append(names, m.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completePodNames completes --pod with the names of the namespace's Pods: compatibility mode
// targets any Pod, not only those of this operator (docs/kubectl-etcd.md, "Compatibility mode
// (--pod)").
func completePodNames(root *cobra.Command, deps invocation.Factory) error {
	return root.RegisterFlagCompletionFunc(invocation.FlagPod, func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		d, err := deps()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var pods corev1.PodList
		if err := d.Kube.List(cmd.Context(), &pods, client.InNamespace(d.Namespace)); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names := make([]cobra.Completion, 0, len(pods.Items))
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}
