// Package migrate_test runs etcd-migrate's phases against a real kube-apiserver (envtest, with
// this project's CRDs and the legacy ones from legacyfixture) and real etcd processes standing
// in for the legacy members (docs/migration.md, "Testing"). envtest has no kubelet and no
// garbage collector: the fixture's Pods are created as objects and marked Running, and a small
// stand-in collector finishes orphan deletions.
package migrate_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

var k8sClient client.WithWatch

const parallel = 4

func TestMain(m *testing.M) {
	if err := etcdv1alpha2.AddToScheme(scheme.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, "registering the API types:", err)
		os.Exit(1)
	}
	os.Exit(apiserver.RunPackage(m, parallel, scheme.Scheme, func(srv *apiserver.Shared) {
		c, err := client.NewWithWatch(srv.Config, client.Options{Scheme: scheme.Scheme})
		if err != nil {
			fmt.Fprintln(os.Stderr, "building a client:", err)
			os.Exit(1)
		}
		k8sClient = c
	}))
}
