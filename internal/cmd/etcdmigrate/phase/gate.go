package phase

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GateDecision decides whether the legacy controller is stopped: its Deployment is absent, or
// scaled to 0 with none of its Pods still running (a terminating Pod can still reconcile and
// recreate what the adoption removes). It returns "" when the adoption may go on, else why not.
func GateDecision(ref string, dep *appsv1.Deployment, pods []corev1.Pod) string {
	if dep == nil {
		return ""
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 0 {
		n := int32(1)
		if dep.Spec.Replicas != nil {
			n = *dep.Spec.Replicas
		}
		return fmt.Sprintf("the legacy controller Deployment %s runs with replicas %d; scale it to 0 (kubectl scale deployment -n %s %s --replicas=0), then re-run",
			ref, n, dep.Namespace, dep.Name)
	}
	var live []string
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live = append(live, p.Name)
		}
	}
	if len(live) > 0 {
		return fmt.Sprintf("the legacy controller Deployment %s is scaled to 0 but its Pods %s have not ended yet; wait for them, then re-run",
			ref, strings.Join(live, ", "))
	}
	return ""
}

// Gate reads the legacy controller Deployment ref ("namespace/name") and its Pods and applies
// GateDecision; it returns the reason the adoption must not go on, "" when it may.
func Gate(ctx context.Context, r client.Reader, ref string) (string, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		return "", fmt.Errorf("--legacy-controller %q is not namespace/name", ref)
	}
	dep := &appsv1.Deployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep); err != nil {
		if apierrors.IsNotFound(err) {
			return GateDecision(ref, nil, nil), nil
		}
		return "", fmt.Errorf("reading the legacy controller Deployment %s: %w", ref, err)
	}
	var pods corev1.PodList
	if dep.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
		if err != nil {
			return "", fmt.Errorf("the legacy controller Deployment %s has an invalid selector: %w", ref, err)
		}
		if err := r.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return "", fmt.Errorf("listing the legacy controller's Pods: %w", err)
		}
	}
	return GateDecision(ref, dep, pods.Items), nil
}
