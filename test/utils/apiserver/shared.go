package apiserver

import (
	"fmt"
	"os"

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
