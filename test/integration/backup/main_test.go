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
	if err := etcdv1alpha2.AddToScheme(scheme.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, "registering the API types:", err)
		os.Exit(1)
	}
	os.Exit(apiserver.RunPackage(m, parallel, scheme.Scheme, func(srv *apiserver.Shared) { k8sClient = srv.Client }))
}
