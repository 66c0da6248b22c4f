package podstate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(phase corev1.PodPhase, ready, deleting bool) *corev1.Pod {
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: st}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestPodFacts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                    string
		pod                     *corev1.Pod
		running, ready, serving bool
	}{
		{"nil", nil, false, false, false},
		{"running and Ready", pod(corev1.PodRunning, true, false), true, true, true},
		{"running, not Ready", pod(corev1.PodRunning, false, false), true, false, false},
		{"Ready but being deleted", pod(corev1.PodRunning, true, true), false, true, false},
		{"pending", pod(corev1.PodPending, false, false), false, false, false},
		{"failed with a stale Ready", pod(corev1.PodFailed, true, false), false, true, false},
		{"no conditions", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Running(tc.pod); got != tc.running {
				t.Errorf("Running = %v, want %v", got, tc.running)
			}
			if got := ReadyCondition(tc.pod); got != tc.ready {
				t.Errorf("ReadyCondition = %v, want %v", got, tc.ready)
			}
			if got := Serving(tc.pod); got != tc.serving {
				t.Errorf("Serving = %v, want %v", got, tc.serving)
			}
		})
	}
}

func TestContainerStarted(t *testing.T) {
	t.Parallel()
	at := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	p := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{Name: "guard", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}},
		{Name: "etcd", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}},
	}}}
	if got := ContainerStarted(p, "etcd"); !got.Equal(at.Time) {
		t.Errorf("ContainerStarted(etcd) = %v, want %v", got, at.Time)
	}
	if got := ContainerStarted(p, "missing"); !got.IsZero() {
		t.Errorf("ContainerStarted(missing) = %v, want zero", got)
	}
	if got := ContainerStarted(nil, "etcd"); !got.IsZero() {
		t.Errorf("ContainerStarted(nil) = %v, want zero", got)
	}
	waiting := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}}}}
	if got := ContainerStarted(waiting, "etcd"); !got.IsZero() {
		t.Errorf("ContainerStarted(waiting) = %v, want zero", got)
	}
}

// TestWaiting names each waiting container with its reason, its image and the kubelet's words,
// init containers first, and says nothing of running ones.
func TestWaiting(t *testing.T) {
	t.Parallel()
	p := &corev1.Pod{
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "install-etcd-guard", Image: "operator:v1"}},
			Containers:     []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.6.99"}},
		},
		Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "install-etcd-guard", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ErrImagePull", Message: "rpc error: not found"}}}},
		},
	}
	want := "container etcd waits: ErrImagePull (image quay.io/coreos/etcd:v3.6.99): rpc error: not found"
	if got := Waiting(p); got != want {
		t.Errorf("Waiting = %q, want %q", got, want)
	}
	p.Status.InitContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
	p.Status.ContainerStatuses[0].State.Waiting.Message = string(make([]byte, 1000))
	got := Waiting(p)
	if want := "container install-etcd-guard waits: ImagePullBackOff (image operator:v1); container etcd waits: ErrImagePull"; len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("Waiting = %q, want it to start %q", got, want)
	}
	if len(got) > 500 {
		t.Errorf("Waiting quotes %d bytes; the kubelet's message is bounded", len(got))
	}
	if got := Waiting(nil); got != "" {
		t.Errorf("Waiting(nil) = %q", got)
	}
}

// TestInitContainerFailure reports the failed run of an init container through the kubelet's
// retry (terminated, then waiting in back-off, then running again) and nothing once a run
// succeeded.
func TestInitContainerFailure(t *testing.T) {
	t.Parallel()
	failed := &corev1.ContainerStateTerminated{ExitCode: 2, Message: `{"reason":"ChecksumMismatch"}`}
	status := func(state, last corev1.ContainerState) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{
			{Name: "install-tools", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
			{Name: "restore", State: state, LastTerminationState: last},
		}}}
	}
	for name, c := range map[string]struct {
		pod  *corev1.Pod
		want *corev1.ContainerStateTerminated
	}{
		"nil Pod":       {},
		"not started":   {pod: status(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}, corev1.ContainerState{})},
		"running":       {pod: status(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, corev1.ContainerState{})},
		"just failed":   {pod: status(corev1.ContainerState{Terminated: failed}, corev1.ContainerState{}), want: failed},
		"back-off":      {pod: status(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, corev1.ContainerState{Terminated: failed}), want: failed},
		"running again": {pod: status(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, corev1.ContainerState{Terminated: failed}), want: failed},
		"succeeded":     {pod: status(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}, corev1.ContainerState{Terminated: failed})},
	} {
		if got := InitContainerFailure(c.pod, "restore"); got != c.want {
			t.Errorf("%s: InitContainerFailure = %+v, want %+v", name, got, c.want)
		}
	}
	if got := InitContainerFailure(status(corev1.ContainerState{Terminated: failed}, corev1.ContainerState{}), "other"); got != nil {
		t.Errorf("another container: %+v", got)
	}
}
