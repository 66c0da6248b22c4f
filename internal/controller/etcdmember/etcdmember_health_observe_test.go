package etcdmember

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
)

// The parts of the classifier's observation read from the etcd container's status and from
// the memories the member's own status keeps.

func TestContainerObservation(t *testing.T) {
	t.Parallel()
	first, second := exited("Error", "one"), exited("Error", "two")
	for name, tc := range map[string]struct {
		cs   corev1.ContainerStatus
		want health.Container
	}{
		"running, never exited": {
			cs:   corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			want: health.Container{Running: true},
		},
		"waiting after an exit: the last state is the latest exit": {
			cs: crashLooping(4, second),
			want: health.Container{WaitingReason: "CrashLoopBackOff", RestartCount: 4,
				LastTermination: &health.Termination{ExitCode: 2, Reason: "Error", Message: "two"}},
		},
		"terminated now: the current state is the latest exit": {
			cs: corev1.ContainerStatus{RestartCount: 1, State: corev1.ContainerState{Terminated: second},
				LastTerminationState: corev1.ContainerState{Terminated: first}},
			want: health.Container{RestartCount: 1, LastTermination: &health.Termination{ExitCode: 2, Reason: "Error", Message: "two"}},
		},
		"OOMKilled": {
			cs:   crashLooping(1, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}),
			want: health.Container{WaitingReason: "CrashLoopBackOff", RestartCount: 1, LastTermination: &health.Termination{ExitCode: 137, Reason: "OOMKilled"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, containerObservation(&tc.cs)); diff != "" {
				t.Errorf("container (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPreviousTermination: two consecutive exits are seen from the API while the container is
// terminated; after that, only the Healthy condition recorded for the same Pod and the same
// pattern stands for the earlier one.
func TestPreviousTermination(t *testing.T) {
	t.Parallel()
	corrupt := fixtureMessage(t, "db-corrupt")
	wal := fixtureMessage(t, "wal-corrupt")
	classified := healthyState(metav1.ConditionFalse, health.ReasonDataCorrupt, "etcd exited twice in a row with a fatal error (pattern bbolt-invalid): …")
	for name, tc := range map[string]struct {
		m    *etcdv1alpha2.EtcdMember
		cs   corev1.ContainerStatus
		want string // message of the previous termination, empty for none
	}{
		"terminated now, with a last state": {
			m: member(recordedPod("pod-uid")),
			cs: corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exited("Error", corrupt)},
				LastTerminationState: corev1.ContainerState{Terminated: exited("Error", "earlier")}},
			want: "earlier",
		},
		"terminated for the first time": {
			m:  member(recordedPod("pod-uid")),
			cs: corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exited("Error", corrupt)}},
		},
		"waiting, nothing recorded": {
			m: member(recordedPod("pod-uid")), cs: crashLooping(2, exited("Error", corrupt)),
		},
		"waiting, the condition recorded this pattern for this Pod": {
			m: member(recordedPod("pod-uid"), classified), cs: crashLooping(2, exited("Error", corrupt)),
			want: corrupt,
		},
		"waiting, recorded for another Pod": {
			m: member(recordedPod("old-uid"), classified), cs: crashLooping(2, exited("Error", corrupt)),
		},
		"waiting, recorded for another pattern": {
			m: member(recordedPod("pod-uid"), classified), cs: crashLooping(2, exited("Error", wal)),
		},
		"waiting, one match only noted (Healthy True)": {
			m:  member(recordedPod("pod-uid"), healthyState(metav1.ConditionTrue, health.ReasonHealthy, "etcd's last exit matched pattern bbolt-invalid (…)")),
			cs: crashLooping(2, exited("Error", corrupt)),
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := pod(false, started(healthNow.Add(-time.Hour), tc.cs))
			got := previousTermination(p, tc.m, "3.6", "")
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("previous termination %q, want none", got.Message)
			case tc.want != "" && (got == nil || got.Message != tc.want):
				t.Errorf("previous termination %+v, want message %.40q", got, tc.want)
			}
		})
	}
}

// TestWasReadyAndFirstFailure: the member's Ready condition is the memory of a Pod that was
// Ready; a Ready condition that was False before the Pod started says it never was. The
// restart count at the first failure is status.restartBaseline, for the same Pod only.
func TestWasReadyAndFirstFailure(t *testing.T) {
	t.Parallel()
	failedAt := healthNow.Add(-time.Minute)
	crashing := pod(false, started(healthPodStart, crashLooping(1, exited("Error", "x"))))
	notReady := readyState(metav1.ConditionFalse, ReasonPodNotReady, failedAt)
	for name, tc := range map[string]struct {
		m            *etcdv1alpha2.EtcdMember
		p            *corev1.Pod
		wantWas      bool
		wantFail     time.Time
		wantRestarts *int32
	}{
		"Ready now":                              {m: member(readyState(metav1.ConditionTrue, ReasonPodReady, healthPodStart), baseline("pod-uid", 1)), p: pod(true), wantWas: true},
		"turned not Ready after the Pod started": {m: member(notReady), p: crashing, wantWas: true, wantFail: failedAt},
		"not Ready since before the Pod started": {m: member(readyState(metav1.ConditionFalse, ReasonPodNotReady, healthPodStart.Add(-time.Second))), p: crashing, wantFail: healthPodStart.Add(-time.Second)},
		"no Ready condition yet":                 {m: member(), p: crashing},
		"restart count recorded for this Pod":    {m: member(notReady, baseline("pod-uid", 7)), p: crashing, wantWas: true, wantFail: failedAt, wantRestarts: ptr.To[int32](7)},
		"restart count recorded for another Pod": {m: member(notReady, baseline("old-uid", 7)), p: crashing, wantWas: true, wantFail: failedAt},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := wasReady(tc.m, tc.p); got != tc.wantWas {
				t.Errorf("wasReady = %v, want %v", got, tc.wantWas)
			}
			want := health.Failure{At: tc.wantFail, RestartCount: tc.wantRestarts}
			if diff := cmp.Diff(want, firstFailure(tc.m, tc.p)); diff != "" {
				t.Errorf("firstFailure (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRestartBaseline: the restart count is taken when the Pod is first seen up and not Ready,
// kept while it stays so, and dropped when it is Ready again or not up; another Pod starts
// over.
func TestRestartBaseline(t *testing.T) {
	t.Parallel()
	crashing := pod(false, started(healthPodStart, crashLooping(4, exited("Error", "x"))))
	for name, tc := range map[string]struct {
		m    *etcdv1alpha2.EtcdMember
		p    *corev1.Pod
		want *etcdv1alpha2.RestartBaseline
	}{
		"first seen not Ready: taken now": {m: member(), p: crashing,
			want: &etcdv1alpha2.RestartBaseline{PodUID: "pod-uid", RestartCount: 4}},
		"still not Ready: kept, however many restarts since": {m: member(baseline("pod-uid", 1)), p: crashing,
			want: &etcdv1alpha2.RestartBaseline{PodUID: "pod-uid", RestartCount: 1}},
		"a new Pod: taken again": {m: member(baseline("old-uid", 1)), p: crashing,
			want: &etcdv1alpha2.RestartBaseline{PodUID: "pod-uid", RestartCount: 4}},
		"Ready again: dropped": {m: member(baseline("pod-uid", 1)), p: pod(true, started(healthPodStart, crashLooping(4, nil)))},
		"no Pod: dropped":      {m: member(baseline("pod-uid", 1))},
		"Pending: nothing to count": {m: member(),
			p: pod(false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })},
		"terminating: dropped": {m: member(baseline("pod-uid", 1)),
			p: pod(false, started(healthPodStart, crashLooping(4, nil)), func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(healthNow)) })},
		"no container status yet": {m: member(), p: pod(false)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, restartBaseline(statusInput{member: tc.m, pod: tc.p})); diff != "" {
				t.Errorf("restartBaseline (-want +got):\n%s", diff)
			}
		})
	}
}
