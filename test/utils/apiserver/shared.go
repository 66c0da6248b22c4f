package apiserver

import (
	"fmt"
	"os"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Shared is the API server of one integration package, started once by its TestMain, and an
// administrator's client of it: starting one costs seconds, and the package's tests isolate
// themselves by namespace (NewNamespace).
type Shared struct {
	// Env is the running kube-apiserver and etcd.
	Env *envtest.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client uses Config with the scheme given to StartShared.
	Client client.Client
}

// StartShared starts kube-apiserver and etcd as Start does, with scheme for both the CRD
// installation and the client (client-go's scheme.Scheme when nil). Stop it when the package's
// tests end.
func StartShared(scheme *k8sruntime.Scheme, moreCRDs ...string) (*Shared, error) {
	env, cfg, err := Start(scheme, moreCRDs...)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("building a client: %w", err)
	}
	return &Shared{Env: env, Config: cfg, Client: c}, nil
}

// Stop stops kube-apiserver and etcd. A failure is printed on stderr rather than returned: the
// tests' outcome is decided by then.
func (s *Shared) Stop() {
	if err := s.Env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping kube-apiserver and etcd:", err)
	}
}

// RunPackage is the body of TestMain for a package whose tests share one API server: it makes
// -test.parallel parallel unless the command line set it (DefaultParallel), starts the server
// with scheme (StartShared), hands it to use, runs the tests and stops the server. It returns
// the exit code for os.Exit.
func RunPackage(m *testing.M, parallel int, scheme *k8sruntime.Scheme, use func(*Shared)) int {
	if err := DefaultParallel(parallel); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := StartShared(scheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	use(srv)
	return m.Run()
}
