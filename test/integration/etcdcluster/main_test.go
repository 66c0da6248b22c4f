package etcdcluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-operator/etcd-operator/internal/operator"
)

// One API server serves every test in this package; tests isolate themselves by namespace.
var (
	restConfig *rest.Config
	k8s        client.Client
)

var scheme *runtime.Scheme

// zapLevel is -4 (debug) with ETCDCLUSTER_TEST_DEBUG=1, else errors only.
func zapLevel() zapcore.Level {
	if os.Getenv("ETCDCLUSTER_TEST_DEBUG") != "" {
		return -4
	}
	return zapcore.ErrorLevel
}

func repoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run these tests with `make test`, "+
			"which builds kube-apiserver, etcd and kubectl from pinned sources and sets it")
		return 1
	}
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false), zap.Level(zapLevel())))
	testEnv := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver and etcd:", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping kube-apiserver and etcd:", err)
		}
	}()
	restConfig = cfg
	s, err := operator.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	scheme = s
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "building a client:", err)
		return 1
	}
	return m.Run()
}
