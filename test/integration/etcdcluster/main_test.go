package etcdcluster_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-operator/etcd-operator/internal/operator"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
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

// parallel is how many tests run at once unless -parallel says otherwise: crash tests and fake
// worlds mostly wait, for requeues and the fake kubelet's ticks.
const parallel = 16

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false), zap.Level(zapLevel())))
	s, err := operator.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scheme = s
	os.Exit(apiserver.RunPackage(m, parallel, scheme, func(srv *apiserver.Shared) { restConfig, k8s = srv.Config, srv.Client }))
}
