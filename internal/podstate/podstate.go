package podstate

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Running reports a Pod in phase Running that is not being deleted. nil is not running.
func Running(pod *corev1.Pod) bool {
	return pod != nil && pod.DeletionTimestamp.IsZero() && pod.Status.Phase == corev1.PodRunning
}

// ReadyCondition reports the Pod's own Ready condition, whatever its phase and even while it is
// being deleted: the kubelet's last word on its readiness probe. The member controller's health
// classification reads it this way (a terminating Pod that still answers is not yet failed).
func ReadyCondition(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Serving reports a Pod that runs, is not being deleted and is Ready: one that counts towards
// quorum and readyMembers. A Pod being deleted is about to stop serving, so it no longer counts.
func Serving(pod *corev1.Pod) bool { return Running(pod) && ReadyCondition(pod) }

// ContainerStarted is when the named container's current run started; zero when it is not
// running (or pod is nil).
func ContainerStarted(pod *corev1.Pod, container string) time.Time {
	if pod == nil {
		return time.Time{}
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == container && c.State.Running != nil {
			return c.State.Running.StartedAt.Time
		}
	}
	return time.Time{}
}
