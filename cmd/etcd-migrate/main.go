// Command etcd-migrate adopts clusters of the legacy etcd.aenix.io/v1alpha1 operator in place
// (docs/migration.md).
package main

import (
	"os"

	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

func main() { os.Exit(etcdmigrate.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, version)) }
