// Command namespacedrbac writes the Role of the namespace-scoped install (config/namespaced) from
// the ClusterRole that controller-gen generates from the operator's RBAC markers, so the two never
// drift: the Role holds every rule of the ClusterRole on a namespaced resource, and none on a
// cluster-scoped one, which a Role cannot grant (docs/operator.md, "Namespace-scoped install").
//
//	go run ./hack/namespacedrbac config/rbac/role.yaml config/namespaced
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: namespacedrbac config/rbac/role.yaml config/namespaced")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "hack/namespacedrbac:", err)
		os.Exit(1)
	}
}
