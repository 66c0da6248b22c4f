// Command localcluster runs the project's local multi-node Kubernetes cluster (package
// cluster). `make cluster-up`, `make cluster-down` and `make cluster-status` wrap it.
//
//	go run ./hack/localcluster up                 # build what is missing, start, wait; prints the kubeconfig path
//	go run ./hack/localcluster down               # stop everything and remove what up created
//	go run ./hack/localcluster status             # components, memory, nodes, DNS
//	go run ./hack/localcluster node-stop NODE     # simulate losing a node (kubelet, containers, containerd)
//	go run ./hack/localcluster node-start NODE
//	go run ./hack/localcluster pvc-path NAMESPACE PVC  # host folder backing a PVC
//	go run ./hack/localcluster leftovers          # what of the cluster still exists on the machine
//
// Only results go to stdout; progress goes to stderr.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		stop()
		os.Exit(1)
	}
}
