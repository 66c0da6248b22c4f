// Command etcd-guard runs in every PVC-backed etcd member Pod. An init container copies it from
// the operator's image into a volume shared with the etcd container, whose entrypoint it then is:
// it refuses to start etcd on a data dir that lost the data the member had written, so that the
// member is replaced instead of rejoining under its old identity with an empty log
// (docs/failure-modes.md). The logic lives in internal/guard.
package main

import (
	"os"

	"github.com/etcd-operator/etcd-operator/internal/guard"
)

func main() { os.Exit(guard.Main(os.Args[1:], os.Stderr)) }
