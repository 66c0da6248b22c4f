// Package etcdmigrate is the etcd-migrate command: in-place adoption of clusters of the legacy
// etcd.aenix.io/v1alpha1 operator (docs/migration.md). The root command plans and, with
// --apply, adopts; `verify` checks adopted clusters; `version` prints the version.
package etcdmigrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/migrate"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/phase"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/verify"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/version"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

// Main runs etcd-migrate with args (without the program name) and returns the exit code:
// 0 done, 1 failed, 2 usage, 3 refused (docs/migration.md, "Exit codes").
func Main(args []string, stdin *os.File, stdout, stderr io.Writer, toolVersion string) int {
	root := NewRootCmd(stdin, stdout, stderr, toolVersion)
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
func NewRootCmd(stdin *os.File, stdout, stderr io.Writer, toolVersion string) *cobra.Command {
	kube := genericclioptions.NewConfigFlags(true)
	o := migrate.NewOptions()
	root := &cobra.Command{
		Use:   "etcd-migrate",
		Short: "Adopt clusters of the legacy etcd.aenix.io/v1alpha1 operator in place",
		Long: `etcd-migrate adopts running clusters of the legacy StatefulSet-based operator in place: no Pod
restart, no data move, the same cluster ID and member IDs. Without --apply it prints the plan
and changes nothing.`,
		Example: `  etcd-migrate -n prod
  etcd-migrate -n prod --cluster etcd --apply --backup-pvc-claim backups`,
		Args:              cobra.NoArgs,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := deps(kube, stdin, stdout, stderr)
			if err != nil {
				return err
			}
			return migrate.Run(cmd.Context(), o, d)
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// -k for --kubeconfig (docs/migration.md, "Flags"): the CLI runtime binds it without a
	// shorthand, so it is bound here and handed to the runtime's flags.
	kubeconfig := ""
	kube.KubeConfig = nil
	kube.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVarP(&kubeconfig, "kubeconfig", "k", "", "path to the kubeconfig file")
	kube.KubeConfig = &kubeconfig
	o.Bind(root.Flags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return invocation.Usagef("%v", err) })
	root.AddCommand(verifyCmd(kube, stdin, stdout, stderr), version.NewCmd(toolVersion))
	return root
}

func verifyCmd(kube *genericclioptions.ConfigFlags, stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	var clusters []string
	output := migrate.OutputText
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check adopted clusters: same cluster and member IDs, HashKV equal, Available, no Pod restarted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != migrate.OutputText && output != migrate.OutputJSON {
				return invocation.Usagef("--output %q is not one of text, json", output)
			}
			d, err := deps(kube, stdin, stdout, stderr)
			if err != nil {
				return err
			}
			return verify.Run(cmd.Context(), d.Kube, d.Dialer, d.Namespace, clusters, output == migrate.OutputJSON, d.Out)
		},
	}
	cmd.Flags().StringArrayVar(&clusters, "cluster", nil, "verify only this cluster (repeatable; default all adopted)")
	cmd.Flags().StringVarP(&output, "output", "o", output, "text or json")
	return cmd
}

// deps builds the real dependencies once the flags are parsed. Without -n the scope is every
// namespace, as the legacy operator's clusters are spread over a fleet.
func deps(kube *genericclioptions.ConfigFlags, stdin *os.File, stdout, stderr io.Writer) (*migrate.Deps, error) {
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, invocation.Usagef("reading the kubeconfig: %v", err)
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), etcdv1alpha2.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server: %w", err)
	}
	ns := ""
	if kube.Namespace != nil {
		ns = *kube.Namespace
	}
	return &migrate.Deps{
		Kube: c, Dialer: &phase.PortForwardDialer{REST: cfg}, Clock: clock.RealClock{},
		Prompter: invocation.TerminalPrompter{In: stdin, ErrOut: stderr},
		Out:      stdout, ErrOut: stderr, Namespace: ns,
	}, nil
}
