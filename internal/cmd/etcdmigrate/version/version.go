// Package version is `etcd-migrate version`.
package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
)

// NewCmd prints the tool's version, the plan schema and the legacy API it reads.
func NewCmd(version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _ = fmt.Fprintf(cmd.OutOrStdout(), "etcd-migrate %s (plan schema %s; reads %s)\n", version, plan.Schema, legacy.GroupVersion)
			return nil
		},
	}
}
