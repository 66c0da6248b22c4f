//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/etcd-operator/etcd-operator/test/utils/timing"
)

const (
	// connectTimeout bounds the suite's first contact with the API server.
	connectTimeout = 30 * time.Second
	// namespaceTimeout bounds creating a test namespace.
	namespaceTimeout = 30 * time.Second
	// dumpTimeout bounds writing a failed test's diagnostics.
	dumpTimeout = 2 * time.Minute
)

// suite is set by Main. Tests reach it through NewTest, never directly, so that a package
// without Main fails with a clear message instead of a nil pointer.
var suite *Suite

// Main runs the e2e tests of a package: it connects to the cluster, runs the tests and writes
// the timing report (always, also when tests fail). It returns the exit code; call it from
// TestMain as os.Exit(framework.Main(m)).
func Main(m *testing.M) int {
	s, err := NewSuite(context.Background(), os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	suite = s
	merge := os.Getenv(EnvTimingMerge) == "1"
	firstWriter := !merge || !reportExists(s.ArtifactsDir)
	if d, ok := SetupDuration(os.Getenv); ok && firstWriter {
		// With several e2e packages in one run, the first one to write the report records
		// the setup; the others find it there.
		s.Timing.Record("", "cluster-up", d, os.Getenv(EnvSetupNote))
	}
	code := m.Run()
	s.Timing.Record("", "suite", time.Since(s.Timing.Report().Started), fmt.Sprintf("exit code %d", code))
	write := s.Timing.WriteFiles
	if merge {
		write = s.Timing.MergeFiles
	}
	if err := write(s.ArtifactsDir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: writing timing report: %v\n", err)
		if code == 0 {
			code = 1
		}
	} else {
		fmt.Fprintf(os.Stderr, "e2e: timing report in %s\n", filepath.Join(s.ArtifactsDir, timing.MarkdownFile))
	}
	return code
}

func reportExists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, timing.JSONFile))
	return err == nil
}

// NewSuite builds the clients from the configured kubeconfig and checks that the API server
// answers.
func NewSuite(ctx context.Context, getenv func(string) string) (*Suite, error) {
	path, err := KubeconfigPath(getenv)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	// Dumps and waits make many small requests in bursts; the client-side default (5 QPS)
	// would turn a failure dump into minutes of throttling.
	cfg.QPS, cfg.Burst = 50, 100
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("finding the working dir: %w", err)
	}
	s := &Suite{
		Kubeconfig:   path,
		ArtifactsDir: ArtifactsDir(getenv, wd),
		Timing:       timing.NewRecorder(),
		Labels:       ParseLabelFilter(getenv(EnvLabels)),
	}
	if err := s.NewClients(cfg); err != nil {
		return nil, err
	}
	s.Cluster = clusterFaults(s.Kube)
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if _, err := s.Kube.CoreV1().Namespaces().Get(cctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("reaching the API server of %s (is the cluster up? `make cluster-up`): %w", path, err)
	}
	return s, nil
}

// Test is one test's view of the suite: its own namespace, a context that ends with the test,
// and its artifacts folder.
type Test struct {
	*Suite
	// T is the running test.
	T *testing.T
	// Ctx ends when the test ends.
	Ctx context.Context
	// Namespace was created for this test; it is deleted at the end unless the test failed
	// (or E2E_KEEP_NAMESPACES=1).
	Namespace string
	// ArtifactsDir is artifacts/<test>/, created on first use.
	ArtifactsDir string
}

// NewTest starts an e2e test: it skips the test when none of labels is selected, creates a
// namespace and registers the cleanup that dumps diagnostics on failure and deletes the
// namespace otherwise.
func NewTest(t *testing.T, labels ...Label) *Test {
	t.Helper()
	if suite == nil {
		t.Fatal("e2e framework not initialised: call framework.Main(m) from TestMain")
	}
	if !suite.Labels.Match(labels) {
		t.Skipf("labels %v not selected by %s=%q", labels, EnvLabels, os.Getenv(EnvLabels))
	}
	f := &Test{
		Suite:        suite,
		T:            t,
		Ctx:          t.Context(),
		ArtifactsDir: filepath.Join(suite.ArtifactsDir, ArtifactName(t.Name())),
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   NamespaceName(t.Name()),
		Labels: map[string]string{"e2e.etcd-operator.io/test": ArtifactLabel(t.Name())},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), namespaceTimeout)
	defer cancel()
	if _, err := suite.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating test namespace %s: %v", ns.Name, err)
	}
	f.Namespace = ns.Name
	t.Logf("test namespace %s", ns.Name)
	// t.Context() is already cancelled when cleanups run, so they use their own bounded ones.
	t.Cleanup(func() {
		if t.Failed() {
			dctx, dcancel := context.WithTimeout(context.Background(), dumpTimeout)
			defer dcancel()
			if err := f.Dump(dctx); err != nil {
				t.Logf("dumping diagnostics: %v", err)
			}
			t.Logf("diagnostics in %s; namespace %s kept", f.ArtifactsDir, f.Namespace)
			return
		}
		if os.Getenv(EnvKeepNamespaces) == "1" {
			return
		}
		dctx, dcancel := context.WithTimeout(context.Background(), namespaceTimeout)
		defer dcancel()
		err := suite.Kube.CoreV1().Namespaces().Delete(dctx, f.Namespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting test namespace %s: %v", f.Namespace, err)
		}
	})
	return f
}

// Dump writes the test namespace's diagnostics into f.ArtifactsDir and the operator's into
// f.ArtifactsDir/operator. Secrets are never dumped: artifacts are published and a leaked
// credential there would defeat the secret-leak canary tests.
func (f *Test) Dump(ctx context.Context) error {
	return errors.Join(
		f.DumpNamespace(ctx, f.Namespace, f.ArtifactsDir, true),
		f.DumpNamespace(ctx, OperatorNamespace, filepath.Join(f.ArtifactsDir, "operator"), false),
		f.dumpNodes(ctx, f.ArtifactsDir),
	)
}

// Record adds a duration to the timing report under this test's name.
func (f *Test) Record(name string, d time.Duration, note string) {
	f.Timing.Record(f.T.Name(), name, d, note)
}

// RecordCount adds a count (API writes, connections, lookups in a window) to the report under
// this test's name. The note says what was counted and the target, e.g. "API writes besides
// Lease renewals (target 0)": targets are published next to the figure, never asserted.
func (f *Test) RecordCount(name string, n int64, note string) {
	f.Timing.RecordCount(f.T.Name(), name, n, note)
}

// RecordBytes adds a size (a process's RSS) to the report under this test's name.
func (f *Test) RecordBytes(name string, b int64, note string) {
	f.Timing.RecordBytes(f.T.Name(), name, b, note)
}

// RecordThroughput adds a rate in bytes per second (a snapshot's) to the report under this
// test's name; the note says how it was measured and its target.
func (f *Test) RecordThroughput(name string, bytesPerSecond int64, note string) {
	f.Timing.RecordThroughput(f.T.Name(), name, bytesPerSecond, note)
}

// Measure runs fn, records how long it took under name, and returns fn's error.
func (f *Test) Measure(name string, fn func() error) error {
	return f.Timing.Measure(f.T.Name(), name, fn)
}

// Poll is the package-level Poll bound to the test's context.
func (f *Test) Poll(what string, timeout time.Duration, cond Condition) error {
	return Poll(f.Ctx, what, timeout, DefaultPollInterval, cond)
}
