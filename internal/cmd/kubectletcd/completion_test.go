package kubectletcd

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
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
	status := &cobra.Command{Use: "status (CLUSTER | --pod POD)"}
	parent := &cobra.Command{Use: "snapshot"}
	parent.AddCommand(save)
	root.AddCommand(remove, parent, status)
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
		{status, nil, []string{"demo"}, cobra.ShellCompDirectiveNoFileComp},
		{status, []string{"demo"}, nil, cobra.ShellCompDirectiveNoFileComp},
	} {
		got, dir := tc.cmd.ValidArgsFunction(tc.cmd, tc.given, "")
		if !slices.Equal(got, tc.want) || dir != tc.dir {
			t.Errorf("%s after %v: got %v (directive %d), want %v (%d)", tc.cmd.Name(), tc.given, got, dir, tc.want, tc.dir)
		}
	}
}

func TestCompletionOfPodNames(t *testing.T) {
	e := invocationtest.New(t, "tenant",
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "old-0"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "elsewhere-0"}})
	deps := func() (*invocation.Deps, error) { return e.Deps, nil }
	root := &cobra.Command{Use: "kubectl-etcd"}
	invocation.NewGlobals().Bind(root.PersistentFlags())
	if err := completePodNames(root, deps); err != nil {
		t.Fatal(err)
	}
	complete, ok := root.GetFlagCompletionFunc(invocation.FlagPod)
	if !ok {
		t.Fatal("--pod has no completion")
	}
	got, dir := complete(root, nil, "")
	if !slices.Equal(got, []string{"old-0"}) || dir != cobra.ShellCompDirectiveNoFileComp {
		t.Errorf("--pod completes %v (directive %d), want [old-0]", got, dir)
	}
}
