package etcdmember

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/health"
)

// healthNow is the classification's clock in these tests.
var healthNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// The states the health rows build on.
var (
	// healthPodStart is when the rows' Pods started.
	healthPodStart = healthNow.Add(-time.Hour)
	// wasReadyVoter: the member's Ready condition turned False a minute ago, after its Pod
	// started, so the member was Ready with it.
	wasReadyVoter = readyState(metav1.ConditionFalse, ReasonPodNotReady, healthNow.Add(-time.Minute))
	// currentTemplate authorises the template the fixture Pod runs.
	currentTemplate = withAnnotation(etcdv1alpha2.AnnotationTemplateHash, "h1")
)

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

// baseline sets status.restartBaseline as a previous pass recorded it.
func baseline(podUID string, restarts int32) func(*etcdv1alpha2.EtcdMember) {
	return func(m *etcdv1alpha2.EtcdMember) {
		m.Status.RestartBaseline = &etcdv1alpha2.RestartBaseline{PodUID: podUID, RestartCount: restarts}
	}
}

// healthRow is one observation of a pass and the Healthy condition it must give.
type healthRow struct {
	in          statusInput
	wantStatus  metav1.ConditionStatus
	wantReason  string
	wantMsg     []string
	wantRecheck time.Duration
}

// runHealthRows runs each row through memberHealth, from the objects of one pass to the Healthy
// condition and the time to look again.
func runHealthRows(t *testing.T, rows map[string]healthRow) {
	t.Helper()
	for name, tc := range rows {
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

// TestMemberHealthData: whether the member's data is there, lost or corrupt, from its medium,
// its Pod and the etcd container's exits.
func TestMemberHealthData(t *testing.T) {
	t.Parallel()
	corrupt := fixtureMessage(t, "db-corrupt")
	wiped := fixtureMessage(t, "wiped-restart-new")
	runHealthRows(t, map[string]healthRow{
		"Ready voter": {
			in:         statusInput{member: member(currentTemplate, recordedPod("pod-uid")), pod: pod(true)},
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
		"dormant": {
			in:         statusInput{member: member(dormant, recordedPod("old-uid"))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"dormant"},
		},
		"one corrupt-data exit: noted, not yet classified": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), wasReadyVoter),
				pod: pod(false, started(healthPodStart, crashLooping(1, exited("Error", corrupt))))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"pattern bbolt-invalid"},
			wantRecheck: 2 * time.Minute,
		},
		"two corrupt-data exits in a row, seen while terminated": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), wasReadyVoter),
				pod: pod(false, started(healthPodStart, corev1.ContainerStatus{RestartCount: 1,
					State:                corev1.ContainerState{Terminated: exited("Error", corrupt)},
					LastTerminationState: corev1.ContainerState{Terminated: exited("Error", corrupt)}}))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonDataCorrupt, wantMsg: []string{"(pattern bbolt-invalid)", "replaced"},
		},
		"a data-lost exit already classified stays so while waiting": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), wasReadyVoter,
				healthyState(metav1.ConditionFalse, health.ReasonDataLost, "etcd exited twice in a row with a fatal error (pattern already-bootstrapped): …")),
				pod: pod(false, started(healthPodStart, crashLooping(3, exited("Error", wiped))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonDataLost, wantMsg: []string{"(pattern already-bootstrapped)"},
		},
		"OOMKilled stays True and says so": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), readyState(metav1.ConditionFalse, ReasonPodNotReady, healthNow.Add(-time.Hour))),
				pod: pod(false, started(healthPodStart, crashLooping(5, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"})))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"OOMKilled", "spec.resources.limits.memory"},
		},
	})
}

// TestMemberHealthGraces: a Pod up and not Ready is a crash loop or a failed start only once
// its grace ran out or it restarted often enough; until then the pass looks again when the
// grace ends.
func TestMemberHealthGraces(t *testing.T) {
	t.Parallel()
	runHealthRows(t, map[string]healthRow{
		"not Ready past memberFailureGrace after being Ready: crash loop": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), readyState(metav1.ConditionFalse, ReasonPodNotReady, healthNow.Add(-4*time.Minute))),
				pod: pod(false, started(healthPodStart, crashLooping(2, exited("Error", "panic: boom\n"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonCrashLoop, wantMsg: []string{"memberFailureGrace", "last exit: etcd exited with a panic"},
		},
		"a shorter memberFailureGrace from the operator": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), wasReadyVoter), graces: health.Graces{MemberFailure: 30 * time.Second},
				pod: pod(false, started(healthPodStart, crashLooping(2, exited("Error", "x"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonCrashLoop,
		},
		"never Ready with its template past memberStartGrace: start failed": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), readyState(metav1.ConditionFalse, ReasonPodNotReady, healthPodStart.Add(-time.Second))),
				pod: pod(false, started(healthPodStart, crashLooping(9, exited("Error", "x"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonStartFailed, wantMsg: []string{"memberStartGrace"},
		},
		"starting for a minute: look again when memberStartGrace ends": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), readyState(metav1.ConditionFalse, ReasonPodNotReady, healthNow.Add(-2*time.Minute))),
				pod: pod(false, started(healthNow.Add(-time.Minute), corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"not Ready yet"}, wantRecheck: 4 * time.Minute,
		},
		"3 restarts since first seen not Ready, within the window: crash loop before memberFailureGrace": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), wasReadyVoter, baseline("pod-uid", 2)),
				pod: pod(false, started(healthPodStart, crashLooping(5, exited("Error", "panic: boom\n"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonCrashLoop, wantMsg: []string{"restarted 3 times", "last exit: etcd exited with a panic"},
		},
		"2 restarts since first seen not Ready: not yet, memberFailureGrace runs": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), wasReadyVoter, baseline("pod-uid", 3)),
				pod: pod(false, started(healthPodStart, crashLooping(5, exited("Error", "x"))))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantRecheck: 2 * time.Minute,
		},
		"restarts counted for another Pod do not count": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), wasReadyVoter, baseline("old-uid", 0)),
				pod: pod(false, started(healthPodStart, crashLooping(5, exited("Error", "x"))))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantRecheck: 2 * time.Minute,
		},
		"OOMKilled restarts stay True": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), wasReadyVoter, baseline("pod-uid", 0)),
				pod: pod(false, started(healthPodStart, crashLooping(5, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"})))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantMsg: []string{"OOMKilled"},
		},
		"a learner that was never Ready restarting: start failure, not crash loop": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid"), withID("a1", false), readyState(metav1.ConditionFalse, ReasonLearner, healthPodStart.Add(-time.Second)), baseline("pod-uid", 0)),
				pod: pod(false, started(healthPodStart, crashLooping(9, exited("Error", "x"))))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonStartFailed,
		},
	})
}

// TestMemberHealthNodes: a Pod stuck terminating on a lost Node, a Pod the scheduler cannot
// place, and a Pending Pod whose volume is pinned to a lost Node.
func TestMemberHealthNodes(t *testing.T) {
	t.Parallel()
	terminatingSince := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(healthNow.Add(-d)))
			p.Spec.NodeName = "n1"
		}
	}
	lostNode := &health.Node{Name: "n1", NotReadySince: healthNow.Add(-time.Hour), Unreachable: true}
	runHealthRows(t, map[string]healthRow{
		"terminating on a lost node past the grace": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid")), node: lostNode,
				pod: pod(false, started(healthPodStart, crashLooping(0, nil)), terminatingSince(6*time.Minute))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonNodeLost, wantMsg: []string{"node n1", "not force-deleted"},
		},
		"terminating on a lost node within the grace": {
			in: statusInput{member: member(currentTemplate, recordedPod("pod-uid")), node: lostNode,
				pod: pod(false, started(healthPodStart, crashLooping(0, nil)), terminatingSince(time.Minute))},
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
		"Pending, its volume pinned to a Node that is gone": {
			in:         statusInput{member: member(currentTemplate), pvNode: &health.Node{Name: "n1", Gone: true}, pod: pod(false, unschedulablePod(healthNow))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonNodeLost, wantMsg: []string{"bound to node n1", "new volume elsewhere"},
		},
		"Pending, its volume pinned to a Node NotReady past the node-lost grace": {
			in: statusInput{member: member(currentTemplate), pvNode: &health.Node{Name: "n1", NotReadySince: healthNow.Add(-5 * time.Minute)},
				pod: pod(false, unschedulablePod(healthNow))},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonNodeLost,
		},
		"Pending, its volume pinned to a Node NotReady for a minute: look again in 4": {
			in: statusInput{member: member(currentTemplate), pvNode: &health.Node{Name: "n1", NotReadySince: healthNow.Add(-time.Minute)},
				pod: pod(false, unschedulablePod(healthNow))},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy, wantRecheck: 4 * time.Minute,
		},
		"a shorter node-lost grace from the operator": {
			in: statusInput{member: member(currentTemplate), pvNode: &health.Node{Name: "n1", NotReadySince: healthNow.Add(-time.Minute)},
				pod: pod(false, unschedulablePod(healthNow)), graces: health.Graces{NodeLost: time.Minute}},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonNodeLost,
		},
	})
}

// TestNoReplacementPromisedWithoutQuorum: a Memory member whose Pod went is DataLost either way,
// but while the parent has lost quorum its message must not say it "is replaced" (the issue's
// user saw that on a cluster that could never replace it).
func TestNoReplacementPromisedWithoutQuorum(t *testing.T) {
	m := &etcdv1alpha2.EtcdMember{Spec: etcdv1alpha2.EtcdMemberSpec{Storage: etcdv1alpha2.StorageSpec{Medium: etcdv1alpha2.StorageMediumMemory}},
		Status: etcdv1alpha2.EtcdMemberStatus{MemberID: "1", IsVoter: true, PodUID: "old-pod"}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	with, _ := memberHealth(statusInput{member: m}, now)
	if with.reason != health.ReasonDataLost || !strings.Contains(with.message, "is replaced") {
		t.Fatalf("with quorum: %+v, want DataLost saying it is replaced", with)
	}
	without, _ := memberHealth(statusInput{member: m, quorumLost: true}, now)
	if without.reason != health.ReasonDataLost || strings.Contains(without.message, "is replaced") || !strings.Contains(without.message, "lost quorum") {
		t.Fatalf("without quorum: %+v, want DataLost that says the replacement waits for the quorum", without)
	}
}
