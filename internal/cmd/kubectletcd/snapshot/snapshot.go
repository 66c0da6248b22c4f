// Package snapshot is the parent of `kubectl etcd snapshot save` (a local copy, streamed from
// one member) and `kubectl etcd snapshot create` (an EtcdSnapshot the operator takes to S3 or a
// PVC, docs/backup-restore.md). Each subcommand lives in its own package under this one.
package snapshot

import (
	"github.com/spf13/cobra"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

// NewCmd is the parent command; subcommands are save.NewCmd(deps), create.NewCmd(deps), ...
// in the order --help lists them. It needs no Deps of its own.
func NewCmd(subcommands ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a snapshot to a local file, or have the operator take one",
		Long: `snapshot save streams a snapshot from one member to a file on this machine. snapshot create
asks the operator for an EtcdSnapshot, stored where the cluster's backups go.`,
		Example: `  kubectl etcd snapshot save demo ./demo.db
  kubectl etcd snapshot create demo --pvc-claim backups --wait`,
	}
	invocation.Parent(cmd)
	cmd.AddCommand(subcommands...)
	return cmd
}
