package kubectletcd

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
)

func TestCompletionOfClusterAndMemberNames(t *testing.T) {
	member := &etcdv1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "demo-x7k2p",
		Labels: map[string]string{etcdv1alpha2.LabelCluster: "demo"}}}
	e := invocationtest.New(t, "tenant",
		&etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "demo"}},
		&etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "elsewhere"}}, member)
	deps := func() (*invocation.Deps, error) { return e.Deps, nil }
	root := &cobra.Command{Use: "kubectl-etcd"}
	remove := &cobra.Command{Use: "remove-member CLUSTER MEMBER"}
	save := &cobra.Command{Use: "save CLUSTER FILE"}
	parent := &cobra.Command{Use: "snapshot"}
	parent.AddCommand(save)
	root.AddCommand(remove, parent)
	completeClusterNames(root, deps)

	for _, tc := range []struct {
		cmd   *cobra.Command
		given []string
		want  []string
		dir   cobra.ShellCompDirective
	}{
		{remove, nil, []string{"demo"}, cobra.ShellCompDirectiveNoFileComp},
		{remove, []string{"demo"}, []string{"demo-x7k2p"}, cobra.ShellCompDirectiveNoFileComp},
		{remove, []string{"demo", "demo-x7k2p"}, nil, cobra.ShellCompDirectiveNoFileComp},
		{save, nil, []string{"demo"}, cobra.ShellCompDirectiveNoFileComp},
		{save, []string{"demo"}, nil, cobra.ShellCompDirectiveDefault},
	} {
		got, dir := tc.cmd.ValidArgsFunction(tc.cmd, tc.given, "")
		if !slices.Equal(got, tc.want) || dir != tc.dir {
			t.Errorf("%s after %v: got %v (directive %d), want %v (%d)", tc.cmd.Name(), tc.given, got, dir, tc.want, tc.dir)
		}
	}
}
