package podstate

import (
	"fmt"
	"slices"
	"strings"
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

// maxWaitingMessage bounds the kubelet's message quoted for a waiting container: an image pull
// error can carry a registry's whole answer.
const maxWaitingMessage = 300

// Waiting describes the Pod's containers that wait to run, init containers first, each with its
// reason, its image and the kubelet's message: "container etcd waits: ErrImagePull (image
// quay.io/coreos/etcd:v3.6.99): ...". It is what names why a Pod does not start when its phase
// alone says only Pending. Empty when no container waits (or pod is nil).
func Waiting(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	images := map[string]string{}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		images[c.Name] = c.Image
	}
	var out []string
	for _, st := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		w := st.State.Waiting
		if w == nil || w.Reason == "" {
			continue
		}
		image := images[st.Name]
		if image == "" {
			image = st.Image
		}
		s := fmt.Sprintf("container %s waits: %s (image %s)", st.Name, w.Reason, image)
		if msg := strings.TrimSpace(w.Message); msg != "" {
			if len(msg) > maxWaitingMessage {
				msg = msg[:maxWaitingMessage] + "…"
			}
			s += ": " + msg
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// InitContainerFailure returns the named init container's latest failed run, while it has not
// succeeded since: the run that just ended, or, while the kubelet waits out its back-off or runs
// it again, the one before. nil when the container has not failed, has succeeded, or does not
// exist (or pod is nil). Reporting the last failure through the retry keeps a condition built
// from it from flapping at every attempt.
func InitContainerFailure(pod *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	if pod == nil {
		return nil
	}
	for _, st := range pod.Status.InitContainerStatuses {
		if st.Name != container {
			continue
		}
		if t := st.State.Terminated; t != nil {
			if t.ExitCode == 0 {
				return nil
			}
			return t
		}
		if t := st.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 {
			return t
		}
	}
	return nil
}
