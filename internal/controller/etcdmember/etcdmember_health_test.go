package etcdmember

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/health"
)

var healthNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fixtureMessage is a termination message captured from a real etcd process of the member's
// minor (internal/health/testdata), cut the way the kubelet cuts it.
func fixtureMessage(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "health", "testdata", "3.6", name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return health.TerminationMessageTail(b)
}

// started gives the Pod a start time and an etcd container status.
func started(at time.Time, cs corev1.ContainerStatus) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(at)
		p.Status.StartTime = ptr.To(metav1.NewTime(at))
		cs.Name = desired.ContainerName
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	}
}

func exited(reason, msg string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: 2, Reason: reason, Message: msg}
}

// crashLooping is the etcd container waiting to be restarted after exiting with last.
func crashLooping(restarts int32, last *corev1.ContainerStateTerminated) corev1.ContainerStatus {
	return corev1.ContainerStatus{RestartCount: restarts,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: last}}
}

// readyState sets the member's Ready condition as a previous pass wrote it.
func readyState(st metav1.ConditionStatus, reason string, since time.Time) func(*etcdv1alpha2.EtcdMember) {
	return func(m *etcdv1alpha2.EtcdMember) {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionReady,
			Status: st, Reason: reason, LastTransitionTime: metav1.NewTime(since)})
	}
}

func healthyState(st metav1.ConditionStatus, reason, msg string) func(*etcdv1alpha2.EtcdMember) {
	return func(m *etcdv1alpha2.EtcdMember) {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionHealthy,
			Status: st, Reason: reason, Message: msg})
	}
}

func recordedPod(uid string) func(*etcdv1alpha2.EtcdMember) {
	return func(m *etcdv1alpha2.EtcdMember) { m.Status.PodUID = uid }
}

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

// baseline sets status.restartBaseline as a previous pass recorded it.
func baseline(podUID string, restarts int32) func(*etcdv1alpha2.EtcdMember) {
	return func(m *etcdv1alpha2.EtcdMember) {
		m.Status.RestartBaseline = &etcdv1alpha2.RestartBaseline{PodUID: podUID, RestartCount: restarts}
	}
}

// TestWasReadyAndFirstFailure: the member's Ready condition is the memory of a Pod that was
// Ready; a Ready condition that was False before the Pod started says it never was. The
// restart count at the first failure is status.restartBaseline, for the same Pod only.
func TestWasReadyAndFirstFailure(t *testing.T) {
	t.Parallel()
	podStart := healthNow.Add(-time.Hour)
	failedAt := healthNow.Add(-time.Minute)
	crashing := pod(false, started(podStart, crashLooping(1, exited("Error", "x"))))
	notReady := readyState(metav1.ConditionFalse, ReasonPodNotReady, failedAt)
	for name, tc := range map[string]struct {
		m            *etcdv1alpha2.EtcdMember
		p            *corev1.Pod
		wantWas      bool
		wantFail     time.Time
		wantRestarts *int32
	}{
		"Ready now":                              {m: member(readyState(metav1.ConditionTrue, ReasonPodReady, podStart), baseline("pod-uid", 1)), p: pod(true), wantWas: true},
		"turned not Ready after the Pod started": {m: member(notReady), p: crashing, wantWas: true, wantFail: failedAt},
		"not Ready since before the Pod started": {m: member(readyState(metav1.ConditionFalse, ReasonPodNotReady, podStart.Add(-time.Second))), p: crashing, wantFail: podStart.Add(-time.Second)},
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
	podStart := healthNow.Add(-time.Hour)
	crashing := pod(false, started(podStart, crashLooping(4, exited("Error", "x"))))
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
		"Ready again: dropped": {m: member(baseline("pod-uid", 1)), p: pod(true, started(podStart, crashLooping(4, nil)))},
		"no Pod: dropped":      {m: member(baseline("pod-uid", 1))},
		"Pending: nothing to count": {m: member(),
			p: pod(false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })},
		"terminating: dropped": {m: member(baseline("pod-uid", 1)),
			p: pod(false, started(podStart, crashLooping(4, nil)), func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(healthNow)) })},
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

// TestPinnedNode: only a volume whose required node affinity names one Node, by hostname
// label or by name, is pinned to it.
func TestPinnedNode(t *testing.T) {
	t.Parallel()
	hostname := func(values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: values}}}
	}
	name := func(v string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}
	}
	pv := func(terms ...corev1.NodeSelectorTerm) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{
			Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}}}
	}
	zone := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}
	both := hostname("n1")
	both.MatchExpressions = append(both.MatchExpressions, zone.MatchExpressions...)
	for name, tc := range map[string]struct {
		pv   *corev1.PersistentVolume
		want nodePin
		ok   bool
	}{
		"local volume, hostname label": {pv: pv(hostname("n1")), want: nodePin{value: "n1", byHostname: true}, ok: true},
		"by name":                      {pv: pv(name("n1")), want: nodePin{value: "n1"}, ok: true},
		"the same node in every term":  {pv: pv(hostname("n1"), hostname("n1")), want: nodePin{value: "n1", byHostname: true}, ok: true},
		"no node affinity":             {pv: &corev1.PersistentVolume{}},
		"no required terms":            {pv: &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{}}}},
		"no terms":                     {pv: pv()},
		"two nodes in one term":        {pv: pv(hostname("n1", "n2"))},
		"two nodes in two terms":       {pv: pv(hostname("n1"), hostname("n2"))},
		"a zone, not a node":           {pv: pv(zone)},
		"a node and more":              {pv: pv(both)},
		"NotIn":                        {pv: pv(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n1"}}}})},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := pinnedNode(tc.pv)
			if got != tc.want || ok != tc.ok {
				t.Errorf("pinnedNode = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestAwaitingNode: a PersistentVolume is read only for a Pending Pod that no Node runs.
func TestAwaitingNode(t *testing.T) {
	t.Parallel()
	pendingPod := func(opts ...func(*corev1.Pod)) *corev1.Pod {
		return pod(false, append([]func(*corev1.Pod){func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }}, opts...)...)
	}
	bound := func(p *corev1.Pod) { p.Spec.NodeName = "n1" }
	for name, tc := range map[string]struct {
		p    *corev1.Pod
		want bool
	}{
		"no Pod":                            {},
		"running":                           {p: pod(true)},
		"Pending, not bound to a Node":      {p: pendingPod(), want: true},
		"no phase yet":                      {p: pod(false, func(p *corev1.Pod) { p.Status.Phase = "" }), want: true},
		"Pending, refused by the scheduler": {p: pendingPod(unschedulablePod(healthNow)), want: true},
		"Pending on its Node (starting)":    {p: pendingPod(bound)},
		"Pending and terminating":           {p: pendingPod(func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(healthNow)) })},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := awaitingNode(tc.p); got != tc.want {
				t.Errorf("awaitingNode = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeObservation(t *testing.T) {
	t.Parallel()
	since := metav1.NewTime(healthNow.Add(-time.Minute))
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: since}}}}
	want := &health.Node{Name: "n1", NotReadySince: since.Time, Unreachable: true}
	if diff := cmp.Diff(want, nodeObservation(n)); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}
	n.Spec.Taints = nil
	n.Status.Conditions[0].Status = corev1.ConditionTrue
	if got := nodeObservation(n); !got.Ready || got.Unreachable || !got.NotReadySince.IsZero() {
		t.Errorf("ready node observed as %+v", got)
	}
}

// TestMemberHealth runs every row this controller can observe through the classifier, from the
// objects of one pass to the Healthy condition and the time to look again.
func TestMemberHealth(t *testing.T) {
	t.Parallel()
	corrupt := fixtureMessage(t, "db-corrupt")
	wiped := fixtureMessage(t, "wiped-restart-new")
	podStart := healthNow.Add(-time.Hour)
	wasReadyVoter := readyState(metav1.ConditionFalse, ReasonPodNotReady, healthNow.Add(-time.Minute))
	current := withAnnotation(etcdv1alpha2.AnnotationTemplateHash, "h1")
	terminatingSince := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(healthNow.Add(-d)))
			p.Spec.NodeName = "n1"
		}
	}
	lostNode := &health.Node{Name: "n1", NotReadySince: healthNow.Add(-time.Hour), Unreachable: true}
	for name, tc := range map[string]struct {
		in          statusInput
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMsg     []string
		wantRecheck time.Duration
	}{
		"Ready voter": {
			in:         statusInput{member: member(current, recordedPod("pod-uid")), pod: pod(true)},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"etcd is running"},
		},
		"Memory member whose Pod is gone": {
			in:         statusInput{member: member(memory, recordedPod("old-uid"))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonDataLost, wantMsg: []string{"the Pod was deleted", "never restarted"},
		},
		"Memory member whose Pod failed": {
			in:         statusInput{member: member(memory, recordedPod("pod-uid")), pod: pod(false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonDataLost, wantMsg: []string{"the Pod failed"},
		},
		"Memory member never started: nothing lost": {
			in:         statusInput{member: member(memory)},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy,
		},
		"PVC member without a Pod": {
			in:         statusInput{member: member(recordedPod("old-uid"))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"no Pod"},
		},
		"one corrupt-data exit: noted, not yet classified": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), wasReadyVoter),
				pod: pod(false, started(podStart, crashLooping(1, exited("Error", corrupt))))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"pattern bbolt-invalid"},
			wantRecheck: 2 * time.Minute,
		},
		"two corrupt-data exits in a row, seen while terminated": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), wasReadyVoter),
				pod: pod(false, started(podStart, corev1.ContainerStatus{RestartCount: 1,
					State:                corev1.ContainerState{Terminated: exited("Error", corrupt)},
					LastTerminationState: corev1.ContainerState{Terminated: exited("Error", corrupt)}}))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonDataCorrupt, wantMsg: []string{"(pattern bbolt-invalid)", "replaced"},
		},
		"a data-lost exit already classified stays so while waiting": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), wasReadyVoter,
				healthyState(metav1.ConditionFalse, health.ReasonDataLost, "etcd exited twice in a row with a fatal error (pattern already-bootstrapped): …")),
				pod: pod(false, started(podStart, crashLooping(3, exited("Error", wiped))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonDataLost, wantMsg: []string{"(pattern already-bootstrapped)"},
		},
		"OOMKilled stays True and says so": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), readyState(metav1.ConditionFalse, ReasonPodNotReady, healthNow.Add(-time.Hour))),
				pod: pod(false, started(podStart, crashLooping(5, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"})))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"OOMKilled", "spec.resources.limits.memory"},
		},
		"not Ready past memberFailureGrace after being Ready: crash loop": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), readyState(metav1.ConditionFalse, ReasonPodNotReady, healthNow.Add(-4*time.Minute))),
				pod: pod(false, started(podStart, crashLooping(2, exited("Error", "panic: boom\n"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonCrashLoop, wantMsg: []string{"memberFailureGrace", "last exit: etcd exited with a panic"},
		},
		"a shorter memberFailureGrace from the operator": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), wasReadyVoter), graces: health.Graces{MemberFailure: 30 * time.Second},
				pod: pod(false, started(podStart, crashLooping(2, exited("Error", "x"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonCrashLoop,
		},
		"never Ready with its template past memberStartGrace: start failed": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), readyState(metav1.ConditionFalse, ReasonPodNotReady, podStart.Add(-time.Second))),
				pod: pod(false, started(podStart, crashLooping(9, exited("Error", "x"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonStartFailed, wantMsg: []string{"memberStartGrace"},
		},
		"starting for a minute: look again when memberStartGrace ends": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), readyState(metav1.ConditionFalse, ReasonPodNotReady, healthNow.Add(-2*time.Minute))),
				pod: pod(false, started(healthNow.Add(-time.Minute), corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"not Ready yet"}, wantRecheck: 4 * time.Minute,
		},
		"terminating on a lost node past the grace": {
			in: statusInput{member: member(current, recordedPod("pod-uid")), node: lostNode,
				pod: pod(false, started(podStart, crashLooping(0, nil)), terminatingSince(6*time.Minute))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonNodeLost, wantMsg: []string{"node n1", "not force-deleted"},
		},
		"terminating on a lost node within the grace": {
			in: statusInput{member: member(current, recordedPod("pod-uid")), node: lostNode,
				pod: pod(false, started(podStart, crashLooping(0, nil)), terminatingSince(time.Minute))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantRecheck: 4 * time.Minute,
		},
		"unschedulable past the pending grace": {
			in:         statusInput{member: member(), pod: pod(false, unschedulablePod(healthNow.Add(-5*time.Minute)))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonUnschedulable, wantMsg: []string{"the Pod cannot be scheduled: " + schedulerMsg},
		},
		"unschedulable for 1 of 5 minutes: look again in 4": {
			in:         statusInput{member: member(), pod: pod(false, unschedulablePod(healthNow.Add(-time.Minute)))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantRecheck: 4 * time.Minute,
		},
		"a shorter pending grace from the operator": {
			in:         statusInput{member: member(), pod: pod(false, unschedulablePod(healthNow.Add(-10*time.Second))), graces: health.Graces{Pending: 10 * time.Second}},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonUnschedulable,
		},
		"3 restarts since first seen not Ready, within the window: crash loop before memberFailureGrace": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), wasReadyVoter, baseline("pod-uid", 2)),
				pod: pod(false, started(podStart, crashLooping(5, exited("Error", "panic: boom\n"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonCrashLoop, wantMsg: []string{"restarted 3 times", "last exit: etcd exited with a panic"},
		},
		"2 restarts since first seen not Ready: not yet, memberFailureGrace runs": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), wasReadyVoter, baseline("pod-uid", 3)),
				pod: pod(false, started(podStart, crashLooping(5, exited("Error", "x"))))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantRecheck: 2 * time.Minute,
		},
		"restarts counted for another Pod do not count": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), wasReadyVoter, baseline("old-uid", 0)),
				pod: pod(false, started(podStart, crashLooping(5, exited("Error", "x"))))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantRecheck: 2 * time.Minute,
		},
		"OOMKilled restarts stay True": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), wasReadyVoter, baseline("pod-uid", 0)),
				pod: pod(false, started(podStart, crashLooping(5, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"})))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"OOMKilled"},
		},
		"a learner that was never Ready restarting: start failure, not crash loop": {
			in: statusInput{member: member(current, recordedPod("pod-uid"), withID("a1", false), readyState(metav1.ConditionFalse, ReasonLearner, podStart.Add(-time.Second)), baseline("pod-uid", 0)),
				pod: pod(false, started(podStart, crashLooping(9, exited("Error", "x"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonStartFailed,
		},
		"Pending, its volume pinned to a Node that is gone": {
			in:         statusInput{member: member(current), pvNode: &health.Node{Name: "n1", Gone: true}, pod: pod(false, unschedulablePod(healthNow))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonNodeLost, wantMsg: []string{"bound to node n1", "new volume elsewhere"},
		},
		"Pending, its volume pinned to a Node NotReady past the node-lost grace": {
			in: statusInput{member: member(current), pvNode: &health.Node{Name: "n1", NotReadySince: healthNow.Add(-5 * time.Minute)},
				pod: pod(false, unschedulablePod(healthNow))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonNodeLost,
		},
		"Pending, its volume pinned to a Node NotReady for a minute: look again in 4": {
			in: statusInput{member: member(current), pvNode: &health.Node{Name: "n1", NotReadySince: healthNow.Add(-time.Minute)},
				pod: pod(false, unschedulablePod(healthNow))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantRecheck: 4 * time.Minute,
		},
		"a shorter node-lost grace from the operator": {
			in: statusInput{member: member(current), pvNode: &health.Node{Name: "n1", NotReadySince: healthNow.Add(-time.Minute)},
				pod: pod(false, unschedulablePod(healthNow)), graces: health.Graces{NodeLost: time.Minute}},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonNodeLost,
		},
		"dormant": {
			in:         statusInput{member: member(dormant, recordedPod("old-uid"))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"dormant"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, recheck := memberHealth(tc.in, healthNow)
			if got.status != tc.wantStatus || got.reason != tc.wantReason || recheck != tc.wantRecheck {
				t.Errorf("Healthy = %s/%s (%q), recheck %v; want %s/%s, recheck %v", got.status, got.reason, got.message, recheck,
					tc.wantStatus, tc.wantReason, tc.wantRecheck)
			}
			for _, sub := range tc.wantMsg {
				if !strings.Contains(got.message, sub) {
					t.Errorf("message %q does not contain %q", got.message, sub)
				}
			}
		})
	}
}

// TestPVNode is the decision wiring of the pinned-Node lookup: the PersistentVolume is read
// (uncached) only for a Pending, unplaced Pod with a bound claim; the Node is found by its
// hostname label, then by name, and is gone only when neither finds it.
func TestPVNode(t *testing.T) {
	t.Parallel()
	notReady := metav1.NewTime(healthNow.Add(-time.Minute))
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: notReady}}}}
	}
	hostLabel := map[string]string{corev1.LabelHostname: "host-1"}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"host-1"}}}}}}}}}
	boundPVC := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	pendingPod := pod(false, unschedulablePod(healthNow))
	for name, tc := range map[string]struct {
		pod       *corev1.Pod
		pvc       *corev1.PersistentVolumeClaim
		objects   []client.Object
		want      *health.Node
		wantReads int
	}{
		"the Node carrying the hostname label": {pod: pendingPod, pvc: boundPVC, wantReads: 1,
			objects: []client.Object{pv, node("i-0abc", hostLabel), node("host-2", nil)},
			want:    &health.Node{Name: "i-0abc", NotReadySince: notReady.Time}},
		"no label, the Node named like the hostname": {pod: pendingPod, pvc: boundPVC, wantReads: 1,
			objects: []client.Object{pv, node("host-1", nil)},
			want:    &health.Node{Name: "host-1", NotReadySince: notReady.Time}},
		"no such Node: gone": {pod: pendingPod, pvc: boundPVC, wantReads: 1,
			objects: []client.Object{pv, node("host-2", nil)},
			want:    &health.Node{Name: "host-1", Gone: true}},
		"two Nodes with the hostname: unknown": {pod: pendingPod, pvc: boundPVC, wantReads: 1,
			objects: []client.Object{pv, node("a", hostLabel), node("b", hostLabel)}},
		"the PV is gone: unknown": {pod: pendingPod, pvc: boundPVC, wantReads: 1},
		"claim not bound yet: nothing read": {pod: pendingPod, pvc: &corev1.PersistentVolumeClaim{},
			objects: []client.Object{pv}},
		"Pod running: nothing read": {pod: pod(true), pvc: boundPVC, objects: []client.Object{pv}},
		"no claim: nothing read":    {pod: pendingPod, objects: []client.Object{pv}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(tc.objects...).Build()
			reads := 0
			live := interceptor.NewClient(c, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*corev1.PersistentVolume); ok {
						reads++
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			cached := interceptor.NewClient(c, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*corev1.PersistentVolume); ok {
						t.Errorf("PersistentVolume %s read from the cache", key.Name)
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			got, err := New(cached, live).pvNode(t.Context(), tc.pod, tc.pvc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pinned Node (-want +got):\n%s", diff)
			}
			if reads != tc.wantReads {
				t.Errorf("%d PersistentVolume reads, want %d", reads, tc.wantReads)
			}
		})
	}
}
