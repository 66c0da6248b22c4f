package operator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator's Deployment passes its Pod's name and namespace through the downward API, so the
// operator can read its own image and hand it to member Pods as the data-dir guard's image.
const (
	PodNameEnv      = "POD_NAME"
	PodNamespaceEnv = "POD_NAMESPACE"
	// managerContainer is the operator's container in config/manager.
	managerContainer = "manager"
)

// Reading the operator's own Pod needs get on Pods in its namespace; the ClusterRole's Pod rights
// cover it in the default install, this Role in the namespace-scoped one.
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=get,namespace=etcd-operator-system

// guardImage returns the image of the data-dir guard: --data-guard-image when set, else the image
// of the operator's own container, so the guard always comes from the same build as the
// operator (and an image override in kustomize or Helm needs no second setting). Outside a Pod
// it returns "" and member Pods run etcd without the guard. In a Pod whose image it cannot read it
// fails: running unguarded there would silently give up a data-safety check.
func guardImage(ctx context.Context, opts Options, lookupEnv func(string) (string, bool), reader client.Reader) (string, error) {
	if opts.DataGuardImage != "" {
		return opts.DataGuardImage, nil
	}
	name, _ := lookupEnv(PodNameEnv)
	namespace, _ := lookupEnv(PodNamespaceEnv)
	if name == "" || namespace == "" {
		return "", nil
	}
	var pod corev1.Pod
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &pod); err != nil {
		return "", fmt.Errorf("reading the operator's own Pod %s/%s for the data-dir guard's image (or set --%s): %w",
			namespace, name, FlagDataGuardImage, err)
	}
	containers := pod.Spec.Containers
	for _, c := range containers {
		if c.Name == managerContainer {
			return c.Image, nil
		}
	}
	if len(containers) == 1 {
		return containers[0].Image, nil
	}
	return "", fmt.Errorf("the operator's own Pod %s/%s has no container named %q, so the data-dir guard's image is "+
		"unknown: set --%s (or %s) to the operator's image", namespace, name, managerContainer, FlagDataGuardImage, envName(FlagDataGuardImage))
}
