package framework

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/test/utils/timing"
)

// Suite is the state shared by every test of one e2e run.
type Suite struct {
	// Kubeconfig is the path the clients were built from.
	Kubeconfig string
	// RESTConfig talks to the cluster under test.
	RESTConfig *rest.Config
	// Kube is the typed client.
	Kube kubernetes.Interface
	// Dynamic reads objects of any kind, e.g. the project's CRDs without importing api/.
	Dynamic dynamic.Interface
	// Discovery lists the API resources the cluster serves.
	Discovery discovery.DiscoveryInterface
	// ArtifactsDir receives timing.json, timing.md and one folder per failed test.
	ArtifactsDir string
	// Timing collects durations for the timing report.
	Timing *timing.Recorder
	// Cluster holds the fault injectors the cluster tool provides; nil parts are unsupported.
	Cluster ClusterFaults
	// Labels selects which tests run.
	Labels LabelFilter
}

// NewClients fills the Kubernetes clients of s from cfg.
func (s *Suite) NewClients(cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building dynamic client: %w", err)
	}
	s.RESTConfig, s.Kube, s.Dynamic, s.Discovery = cfg, kube, dyn, kube.Discovery()
	return nil
}

// NewClient returns a controller-runtime client whose scheme holds the client-go types and
// whatever addToScheme adds (e.g. the project's v1alpha2.AddToScheme).
func (s *Suite) NewClient(addToScheme ...func(*runtime.Scheme) error) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	c, err := client.New(s.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building controller-runtime client: %w", err)
	}
	return c, nil
}
