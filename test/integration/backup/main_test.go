// Package backup_test runs the backup controllers (docs/backup-restore.md) against a real
// kube-apiserver and etcd, each pass driven by the test with a fake clock.
package backup_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

// One API server serves every test in this package; tests isolate themselves by namespace.
var k8sClient client.Client

const parallel = 8

func TestMain(m *testing.M) {
	if err := apiserver.DefaultParallel(parallel); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := etcdv1alpha2.AddToScheme(scheme.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, "registering the API types:", err)
		return 1
	}
	env, cfg, err := apiserver.Start(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping kube-apiserver and etcd:", err)
		}
	}()
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "building a client:", err)
		return 1
	}
	return m.Run()
}
