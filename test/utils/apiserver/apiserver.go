// Package apiserver starts the integration tier's real kube-apiserver and etcd (controller-runtime's
// envtest, with binaries built from pinned sources by hack/binaries) with this project's CRDs
// installed, so every integration package starts its API server the same way.
package apiserver

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ErrNoAssets says the binaries are missing. The integration packages fail rather than skip on
// it, so that a green run can never mean that nothing ran.
var ErrNoAssets = errors.New("KUBEBUILDER_ASSETS is not set: run these tests with `make test`, " +
	"which builds kube-apiserver, etcd and kubectl from pinned sources and sets it")

// CRDDirectory is config/crd/bases of this repository.
func CRDDirectory() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "crd", "bases")
}

// Start starts kube-apiserver and etcd with the project's CRDs installed, and those in
// moreCRDs (folders, such as cert-manager's deploy/crds). scheme may be nil (envtest then uses
// client-go's). Stop the returned environment when the package's tests end.
func Start(scheme *k8sruntime.Scheme, moreCRDs ...string) (*envtest.Environment, *rest.Config, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, nil, ErrNoAssets
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     append([]string{CRDDirectory()}, moreCRDs...),
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	return env, cfg, nil
}

// NewNamespace creates a namespace named prefix plus a random suffix through c, for one test:
// tests that share an API server isolate themselves by namespace (TESTING.md, "Rules for
// tests"). It returns the namespace's name.
func NewNamespace(tb testing.TB, c client.Client, prefix string) string {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(tb.Context(), ns); err != nil {
		tb.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// DefaultParallel makes -test.parallel n unless the command line set it; call it from TestMain,
// before m.Run. Integration tests mostly wait, on their API server, controllers and etcd
// processes, so Go's default, GOMAXPROCS, leaves the machine idle: two tests at a time on a
// 2-core CI runner.
func DefaultParallel(n int) error {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return nil
	}
	if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
		return fmt.Errorf("setting -test.parallel: %w", err)
	}
	return nil
}
