// Package kubectletcd is the kubectl-etcd plugin: the root command, its global flags and the
// order of its subcommands, each of which lives in its own package (docs/kubectl-etcd.md).
package kubectletcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/alarm"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/compact"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/defrag"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/members"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/moveleader"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/pause"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/recovery"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/removemember"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/replacemember"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/resume"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/retry"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/snapshot"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/snapshot/create"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/snapshot/save"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/status"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/tunnel"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/version"
)

// Command groups, in the order a person on call needs them.
const (
	groupLook     = "look"
	groupRepair   = "repair"
	groupMaintain = "maintain"
	groupPlugin   = "plugin"
)

// Main runs the plugin with args (without the program name) and returns the exit code.
func Main(args []string, stdin *os.File, stdout, stderr io.Writer, pluginVersion string) int {
	// Keep the order below in --help rather than cobra's alphabetical one.
	cobra.EnableCommandSorting = false
	root := NewRootCmd(stdin, stdout, stderr, pluginVersion)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return invocation.ExitOK
	}
	_, _ = fmt.Fprintln(stderr, "Error:", err)
	if strings.HasPrefix(err.Error(), "unknown command") {
		return invocation.ExitUsage
	}
	return invocation.Code(err)
}

// NewRootCmd builds the command tree.
func NewRootCmd(stdin *os.File, stdout, stderr io.Writer, pluginVersion string) *cobra.Command {
	g := invocation.NewGlobals()
	root := &cobra.Command{
		Use: "kubectl-etcd",
		// Help and usage lines read as kubectl's plugin lookup invokes it.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl etcd"},
		Short:       "Day-2 operations on etcd clusters run by etcd-operator, by cluster name, safe by default",
		Long: `kubectl etcd works on an EtcdCluster by name. Read commands show the cluster as the operator
and etcd see it. Mutating commands print a plan and change nothing unless --apply is given;
membership changes go through the operator, which runs its quorum checks.

--pod NAME (compatibility mode) reaches the etcd of one Pod instead, with TLS derived from its
etcd flags, for a Pod no EtcdCluster manages (a legacy member before etcd-migrate, or a member
whose EtcdCluster is broken or gone): status, members, alarm, defrag, compact and move-leader.`,
		Example: `  kubectl etcd status demo
  kubectl etcd replace-member demo demo-x7k2p --reason "disk errors" --apply --wait
  kubectl etcd members --pod old-0        # compatibility mode: one Pod, no EtcdCluster`,
		Version:           pluginVersion,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	g.Bind(root.PersistentFlags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return invocation.Usagef("%v", err) })
	root.AddGroup(
		&cobra.Group{ID: groupLook, Title: "Look at a cluster:"},
		&cobra.Group{ID: groupRepair, Title: "Repair it (through the operator):"},
		&cobra.Group{ID: groupMaintain, Title: "Maintain it:"},
		&cobra.Group{ID: groupPlugin, Title: "About the plugin:"},
	)
	deps := factory(g, stdin, stdout, stderr, pluginVersion)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupLook, status.NewCmd(deps), members.NewCmd(deps), alarm.NewCmd(deps))
	add(groupRepair, recovery.NewCmd(deps), replacemember.NewCmd(deps), removemember.NewCmd(deps), retry.NewCmd(deps))
	add(groupMaintain, snapshot.NewCmd(save.NewCmd(deps), create.NewCmd(deps)), defrag.NewCmd(deps), compact.NewCmd(deps), moveleader.NewCmd(deps))
	add(groupMaintain, pause.NewCmd(deps), resume.NewCmd(deps))
	add(groupPlugin, version.NewCmd(deps))
	completeClusterNames(root, deps)
	// It fails only for a flag that does not exist; TestPodCommandsHaveAPodExample checks the
	// root has the completion.
	_ = completePodNames(root, deps)
	return root
}

// factory builds the real dependencies once the flags are parsed.
func factory(g *invocation.Globals, stdin *os.File, stdout, stderr io.Writer, pluginVersion string) invocation.Factory {
	return func() (*invocation.Deps, error) {
		if err := g.Validate(); err != nil {
			return nil, err
		}
		cfg, err := g.Kube.ToRESTConfig()
		if err != nil {
			return nil, invocation.Usagef("reading the kubeconfig: %v", err)
		}
		scheme := runtime.NewScheme()
		if err := errors.Join(clientgoscheme.AddToScheme(scheme), etcdv1alpha2.AddToScheme(scheme)); err != nil {
			return nil, err
		}
		kube, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return nil, fmt.Errorf("connecting to the API server: %w", err)
		}
		ns, err := g.Namespace()
		if err != nil {
			return nil, err
		}
		dialer := &tunnel.Dialer{REST: cfg, Reader: kube, CredentialsSecret: g.CredentialsSecret,
			PodTLS: tunnel.PodTLS{CASecret: g.CASecret, ClientCertSecret: g.ClientCertSecret}}
		return &invocation.Deps{
			Kube:      kube,
			Dialer:    dialer,
			Clock:     clock.RealClock{},
			Prompter:  invocation.TerminalPrompter{In: stdin, ErrOut: stderr},
			Out:       stdout,
			ErrOut:    stderr,
			Namespace: ns,
			Globals:   g,
			Version:   pluginVersion,
		}, nil
	}
}
