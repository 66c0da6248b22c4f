// Command kubectl-etcd is the kubectl plugin for etcd clusters run by etcd-operator: `kubectl
// etcd status demo` once the binary is on PATH (docs/kubectl-etcd.md). The commands live in
// internal/cmd/kubectletcd.
package main

import (
	"os"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd"
)

// version is set by make release (-ldflags -X main.version=...).
var version = "dev"

func main() { os.Exit(kubectletcd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, version)) }
