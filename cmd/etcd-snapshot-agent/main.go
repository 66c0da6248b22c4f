// Command etcd-snapshot-agent is what snapshot Jobs run (internal/snapshotagent,
// docs/backup-restore.md, "The snapshot agent"). It is the same agent as `etcd-operator
// snapshot-agent`, built on its own and shipped in the operator's image beside it: a binary
// without the controllers' packages starts with about 25 MiB fewer resident pages, which is
// most of what keeps the agent's peak memory within 64 MiB (docs/backup-restore.md,
// "Performance").
package main

import (
	"os"

	"github.com/etcd-operator/etcd-operator/internal/snapshotagent"
)

func main() { os.Exit(snapshotagent.Main(os.Args[1:], os.LookupEnv, os.Stderr)) }
