package crd_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

// One API server serves every test in this package: starting one costs seconds, and tests
// isolate themselves by namespace.
var (
	k8sClient  client.Client
	restConfig *rest.Config
	testEnv    *envtest.Environment
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// parallel is how many tests run at once unless -parallel says otherwise: each waits on the
// API server.
const parallel = 8

func TestMain(m *testing.M) {
	if err := etcdv1alpha2.AddToScheme(scheme.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, "registering the API types:", err)
		os.Exit(1)
	}
	os.Exit(apiserver.RunPackage(m, parallel, scheme.Scheme, func(srv *apiserver.Shared) {
		testEnv, restConfig, k8sClient = srv.Env, srv.Config, srv.Client
	}))
}
