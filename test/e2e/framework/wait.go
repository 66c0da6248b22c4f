//go:build e2e

package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodReady reports whether the Pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitForPodsReady waits until exactly want Pods match selector in namespace and all are Ready
// and not terminating, and returns them sorted by name.
func (s *Suite) WaitForPodsReady(ctx context.Context, namespace, selector string, want int, timeout time.Duration) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := Poll(ctx, fmt.Sprintf("%d Ready Pods %q in %s", want, selector, namespace), timeout, DefaultPollInterval,
		func(ctx context.Context) (bool, string, error) {
			list, err := s.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err.Error(), nil // API hiccups are retried until the timeout
			}
			pods = list.Items
			sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
			var states []string
			ready := 0
			for i := range pods {
				p := &pods[i]
				ok := PodReady(p) && p.DeletionTimestamp == nil
				if ok {
					ready++
				}
				states = append(states, fmt.Sprintf("%s=%s/ready:%t", p.Name, p.Status.Phase, ok))
			}
			state := fmt.Sprintf("%d/%d ready [%s]", ready, len(pods), strings.Join(states, " "))
			return ready == want && len(pods) == want, state, nil
		})
	return pods, err
}

// WaitForPodGone waits until the Pod with this name and UID no longer exists. A Pod recreated
// under the same name (by a controller) has another UID and counts as gone.
func (s *Suite) WaitForPodGone(ctx context.Context, namespace, name string, uid types.UID, timeout time.Duration) error {
	return Poll(ctx, fmt.Sprintf("Pod %s/%s (uid %s) to be gone", namespace, name, uid), timeout, DefaultPollInterval,
		func(ctx context.Context) (bool, string, error) {
			p, err := s.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return true, "", nil
			case err != nil:
				return false, err.Error(), nil
			case p.UID != uid:
				return true, "", nil
			}
			return false, fmt.Sprintf("phase %s, deletionTimestamp %v", p.Status.Phase, p.DeletionTimestamp), nil
		})
}

// WaitForDeploymentAvailable waits until the Deployment's controller observed its latest spec
// and every desired replica is updated and available.
func (s *Suite) WaitForDeploymentAvailable(ctx context.Context, namespace, name string, timeout time.Duration) error {
	return Poll(ctx, fmt.Sprintf("Deployment %s/%s available", namespace, name), timeout, DefaultPollInterval,
		func(ctx context.Context) (bool, string, error) {
			d, err := s.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return deploymentAvailable(d), fmt.Sprintf("generation %d observed %d, replicas %d updated %d available %d",
				d.Generation, d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas), nil
		})
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want
}

// WaitForNoPods waits until no Pod matches selector in namespace.
func (s *Suite) WaitForNoPods(ctx context.Context, namespace, selector string, timeout time.Duration) error {
	return Poll(ctx, fmt.Sprintf("no Pods %q in %s", selector, namespace), timeout, DefaultPollInterval,
		func(ctx context.Context) (bool, string, error) {
			list, err := s.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err.Error(), nil
			}
			names := make([]string, 0, len(list.Items))
			for _, p := range list.Items {
				names = append(names, p.Name)
			}
			return len(list.Items) == 0, "remaining: " + strings.Join(names, ", "), nil
		})
}
