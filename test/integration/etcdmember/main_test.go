// Package etcdmember_test runs the EtcdMember controller against a real kube-apiserver and etcd
// (envtest), with etcd itself replaced by the recorder fake from internal/etcdclient/etcdfake.
// There is no kubelet and no garbage collector: tests set Pod status themselves, and check
// ownerReferences rather than waiting for collection.
package etcdmember_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/operator"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

// imageRepository is what the controller under test is configured with, so tests can tell its
// Pods from defaults.
const imageRepository = "registry.example.test/etcd"

// guardImage stands in for the operator's own image, which holds the data-dir guard.
const guardImage = "registry.example.test/etcd-operator:test"

// testGraces stand in for the minutes of docs/design/timings.md, "Graces", so that tests see the
// graces end. No other test keeps a Pod running and not Ready, or terminating, so none is
// classified by them by accident. The crash and start graces leave a test time to show two exits in
// a row before a crash loop is declared.
var testGraces = health.Graces{
	MemberFailure: 6 * time.Second, MemberStart: 6 * time.Second, Pending: 3 * time.Second,
	NodeLost: 3 * time.Second, Terminating: 3 * time.Second,
}

// One API server and one manager serve every test in this package; tests isolate themselves by
// namespace.
var (
	k8sClient  client.Client
	restConfig *rest.Config
	etcd       = &fakeEtcd{clusters: map[string]*etcdfake.Recorder{}}
	// views stands in for the EtcdCluster controller's board: tests publish on it what that
	// controller would.
	views = etcdview.NewBoard()
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("ETCDMEMBER_TEST_LOG") != "" {
		logf.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := apiserver.StartShared(scheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	restConfig, k8sClient = srv.Config, srv.Client

	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating the manager:", err)
		return 1
	}
	if err := etcdmember.SetupWithManager(mgr,
		etcdmember.WithEtcdClients(etcd), etcdmember.WithImageRepository(imageRepository),
		etcdmember.WithGuardImage(guardImage), etcdmember.WithGraces(testGraces), etcdmember.WithEtcdViews(views)); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the EtcdMember controller:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return m.Run()
}

// fakeEtcd hands the controller one recorder fake per cluster and counts what it asked for.
type fakeEtcd struct {
	mu       sync.Mutex
	clusters map[string]*etcdfake.Recorder
	configs  map[string]etcdclient.Config
	gets     map[string]int
}

var _ etcdclient.Clients[etcdclient.Client] = (*fakeEtcd)(nil)

// clusterOf extracts "<namespace>/<cluster>" from a pool key, whatever suffix the controller
// adds.
func clusterOf(key string) string {
	if i := strings.IndexAny(key, "#@"); i >= 0 {
		return key[:i]
	}
	return key
}

func (f *fakeEtcd) Get(_ context.Context, key string, cfg etcdclient.Config) (etcdclient.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.configs == nil {
		f.configs, f.gets = map[string]etcdclient.Config{}, map[string]int{}
	}
	f.configs[clusterOf(key)] = cfg
	f.gets[clusterOf(key)]++
	return f.recorder(clusterOf(key)), nil
}

func (f *fakeEtcd) Forget(string) error { return nil }

func (f *fakeEtcd) Pooled(key string) (etcdclient.Client, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.configs[clusterOf(key)]; !ok {
		return nil, false
	}
	return f.recorder(clusterOf(key)), true
}

// recorder returns the fake of one cluster ("<namespace>/<name>"), creating it on first use.
// Callers hold f.mu or call forCluster.
func (f *fakeEtcd) recorder(cluster string) *etcdfake.Recorder {
	r, ok := f.clusters[cluster]
	if !ok {
		r = &etcdfake.Recorder{}
		f.clusters[cluster] = r
	}
	return r
}

// setMembers makes a cluster's etcd list members from now on. The recorder is replaced rather
// than changed, because its fields are not safe to write while the controller reads them.
func (f *fakeEtcd) setMembers(namespace, name string, members ...etcdclient.Member) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusters[namespace+"/"+name] = &etcdfake.Recorder{Members: members}
}

// getsOf counts how often the controller asked for a client of a cluster.
func (f *fakeEtcd) getsOf(namespace, name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[namespace+"/"+name]
}

func (f *fakeEtcd) configOf(namespace, name string) (etcdclient.Config, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.configs[namespace+"/"+name]
	return c, ok
}
