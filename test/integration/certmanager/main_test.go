package certmanager_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
	"github.com/etcd-operator/etcd-operator/internal/operator"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

// One API server serves every test in this package; tests isolate themselves by namespace.
var (
	restConfig *rest.Config
	scheme     *runtime.Scheme
	k8s        client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	crds, err := certManagerCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if scheme, err = operator.NewScheme(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := apiserver.StartShared(scheme, crds)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	restConfig, k8s = srv.Config, srv.Client
	return m.Run()
}

// certManagerCRDs is cert-manager's deploy/crds at the version hack/certmanager pins, in the
// module cache (downloaded if missing).
func certManagerCRDs() (string, error) {
	root, err := pinned.FindRepoRoot(".")
	if err != nil {
		return "", err
	}
	versions, err := pinned.LoadVersions(root)
	if err != nil {
		return "", err
	}
	cache, err := pinned.DefaultCacheDir()
	if err != nil {
		return "", err
	}
	return pinned.NewBuilder(cache, versions, io.Discard).CertManagerCRDs(context.Background(), root)
}
