package etcdmember

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/guard"
)

func TestReadyCondition(t *testing.T) {
	t.Parallel()
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }
	pendingPhase := func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
	for name, tc := range map[string]struct {
		in         statusInput
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string // substring; empty means not checked
	}{
		"voter with a ready Pod": {
			in:         statusInput{member: member(withID("a1", true)), pod: pod(true)},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonPodReady, wantMsg: "member a1 is a voter",
		},
		"learners are never Ready": {
			in:         statusInput{member: member(withID("a1", false)), pod: pod(true)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonLearner,
		},
		"ready Pod, no member ID yet": {
			in:         statusInput{member: member(), pod: pod(true)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonDiscoveringMemberID,
		},
		// A staged member's Pod runs its guard, which holds etcd until the member's add.
		"staged Pod waiting to be added": {
			in: statusInput{member: member(), pod: pod(false, func(p *corev1.Pod) {
				p.Spec.Containers = []corev1.Container{{Name: desired.ContainerName, Command: []string{desired.GuardBinary, "run", "--" + guard.FlagAwaitMembership, "--", desired.EtcdBinary}}}
			})},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonAwaitingMembership, wantMsg: "waits to be added to etcd",
		},
		"Pod not ready reports its phase": {
			in:         statusInput{member: member(withID("a1", true)), pod: pod(false, pendingPhase)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPodNotReady, wantMsg: "pod phase: Pending",
		},
		"Pod terminating": {
			in:         statusInput{member: member(withID("a1", true)), pod: pod(true, terminating)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPodNotReady, wantMsg: "terminating",
		},
		"no Pod while initialCluster is empty": {
			in:         statusInput{member: member(pending)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPodNotReady, wantMsg: "spec.initialCluster",
		},
		"no Pod, blocked": {
			in:         statusInput{member: member(), notes: notes{podBlocked: "TLS Secret s does not exist"}},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPodNotReady, wantMsg: "no pod: TLS Secret s does not exist",
		},
		"ownership conflict wins over a ready Pod": {
			in:         statusInput{member: member(withID("a1", true)), pod: pod(true), notes: notes{conflict: "PVC data-x belongs to member UID other"}},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPodNotReady, wantMsg: "belongs to member UID other",
		},
		"dormant wins over everything but deletion": {
			in:         statusInput{member: member(withID("a1", true), dormant), notes: notes{conflict: "x"}},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPaused, wantMsg: "PVC data-" + testMember,
		},
		"dormant with its Pod still terminating": {
			in:         statusInput{member: member(withID("a1", true), dormant), pod: pod(true, terminating)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPaused, wantMsg: "being deleted",
		},
		// A held deletion changes nothing about serving: the voter stays Ready, and says why
		// its deletion waits.
		"deleting, held": {
			in: statusInput{member: member(withID("a1", true), deleting), pod: pod(true),
				notes: notes{deletion: &releaseDecision{blocked: true, message: MsgDeletionBlocked}}},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonPodReady, wantMsg: MsgDeletionBlocked,
		},
		"deleting, allowed, waiting for the removal": {
			in: statusInput{member: member(withID("a1", true), deleting), pod: pod(true),
				notes: notes{deletion: &releaseDecision{message: msgWaitingForRemoval}}},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonRemoving, wantMsg: msgWaitingForRemoval,
		},
		"deleting without a decision": {
			in:         statusInput{member: member(deleting)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonRemoving, wantMsg: "being deleted",
		},
		"Pod the scheduler cannot place: its words at once": {
			in:         statusInput{member: member(withID("a1", true)), pod: pod(false, unschedulablePod(time.Now()))},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPodNotReady, wantMsg: "pod phase: Pending; unschedulable: " + schedulerMsg,
		},
		"Pod whose image cannot be pulled: the kubelet's reason and the image": {
			in: statusInput{member: member(withID("a1", true)), pod: pod(false, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.Containers = []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.6.99"}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", State: corev1.ContainerState{
					Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
			})},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPodNotReady,
			wantMsg: "pod phase: Pending; container etcd waits: ImagePullBackOff (image quay.io/coreos/etcd:v3.6.99): Back-off pulling image",
		},
		"memory member that lost its Pod": {
			in:         statusInput{member: member(memory, withID("a1", true)), notes: notes{memoryPodLost: true}},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPodNotReady, wantMsg: "not recreated",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := readyCondition(tc.in)
			if got.status != tc.wantStatus || got.reason != tc.wantReason {
				t.Errorf("Ready = %s/%s (%q), want %s/%s", got.status, got.reason, got.message, tc.wantStatus, tc.wantReason)
			}
			if tc.wantMsg != "" && !strings.Contains(got.message, tc.wantMsg) {
				t.Errorf("Ready message %q does not contain %q", got.message, tc.wantMsg)
			}
		})
	}
}

func TestUpdatedCondition(t *testing.T) {
	t.Parallel()
	authorised := func(h string) func(*etcdv1alpha2.EtcdMember) {
		return withAnnotation(etcdv1alpha2.AnnotationTemplateHash, h)
	}
	for name, tc := range map[string]struct {
		in         statusInput
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		"Pod runs the authorised hash": {
			in:         statusInput{member: member(authorised("h1")), pod: pod(true)},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonTemplateCurrent,
		},
		"authorised hash differs: restart pending": {
			in:         statusInput{member: member(authorised("h2")), pod: pod(true)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonRestartPending,
		},
		"Memory member: replacement pending": {
			in:         statusInput{member: member(memory, authorised("h2")), pod: pod(true)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonReplacementPending,
		},
		"no authorised hash: the current template stands in": {
			in:         statusInput{member: member(), pod: pod(true), notes: notes{desiredHash: "h1"}},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonTemplateCurrent,
		},
		"no authorised hash, current template differs": {
			in:         statusInput{member: member(), pod: pod(true), notes: notes{desiredHash: "h9"}},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonRestartPending,
		},
		"no hash at all": {
			in:         statusInput{member: member(), pod: pod(true)},
			wantStatus: metav1.ConditionUnknown, wantReason: ReasonTemplateUnknown,
		},
		"no Pod": {
			in:         statusInput{member: member(authorised("h1"))},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPodAbsent,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := updatedCondition(tc.in)
			if got.status != tc.wantStatus || got.reason != tc.wantReason {
				t.Errorf("Updated = %s/%s (%q), want %s/%s", got.status, got.reason, got.message, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	t.Parallel()
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	later := metav1.NewTime(now.Add(time.Hour))
	selector := etcdv1alpha2.LabelCluster + "=" + testCluster + "," + etcdv1alpha2.LabelComponent + "=" + testMember

	t.Run("with a Pod and a PVC", func(t *testing.T) {
		t.Parallel()
		m := member(withID("a1", true), withAnnotation(etcdv1alpha2.AnnotationTemplateHash, "h1"))
		m.Status.Version = "3.6.5"
		got := computeStatus(statusInput{member: m, pod: pod(true), pvcOwned: true}, now)
		want := etcdv1alpha2.EtcdMemberStatus{
			MemberID: "a1", IsVoter: true, Version: "3.6.5", // the EtcdCluster controller's, kept
			PodName: testMember, PodUID: "pod-uid", Replicas: 1, Selector: selector, PVCName: "data-" + testMember,
			ReadyTemplateHash: "h1", // the Ready Pod's template
			Conditions: []metav1.Condition{
				{Type: etcdv1alpha2.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonPodReady,
					Message: "pod is ready and member a1 is a voter", ObservedGeneration: 3, LastTransitionTime: now},
				{Type: etcdv1alpha2.ConditionUpdated, Status: metav1.ConditionTrue, Reason: ReasonTemplateCurrent,
					Message: "pod runs template h1", ObservedGeneration: 3, LastTransitionTime: now},
				{Type: etcdv1alpha2.ConditionVersionDrifted, Status: metav1.ConditionFalse, Reason: ReasonVersionMatched,
					Message: "member runs 3.6.5 as specified", ObservedGeneration: 3, LastTransitionTime: now},
				{Type: etcdv1alpha2.ConditionHealthy, Status: metav1.ConditionTrue, Reason: "Healthy",
					Message: "etcd is running", ObservedGeneration: 3, LastTransitionTime: now},
			},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})

	t.Run("dormant keeps the last Pod's identity, replicas 0", func(t *testing.T) {
		t.Parallel()
		m := member(withID("a1", true), dormant)
		m.Status.PodName, m.Status.PodUID = testMember, "old-uid"
		got := computeStatus(statusInput{member: m, pvcOwned: true}, now)
		if got.Replicas != 0 || got.PodUID != "old-uid" || got.PVCName != "data-"+testMember {
			t.Errorf("replicas=%d podUID=%q pvcName=%q, want 0, old-uid, data-%s", got.Replicas, got.PodUID, got.PVCName, testMember)
		}
		if c := meta.FindStatusCondition(got.Conditions, etcdv1alpha2.ConditionReady); c == nil || c.Reason != ReasonPaused {
			t.Errorf("Ready = %+v, want reason %s", c, ReasonPaused)
		}
	})

	t.Run("an unchanged world gives an identical status", func(t *testing.T) {
		t.Parallel()
		m := member(withID("a1", false), withAnnotation(etcdv1alpha2.AnnotationTemplateHash, "h1"))
		in := statusInput{member: m, pod: pod(true), pvcOwned: true}
		m.Status = computeStatus(in, now)
		again := computeStatus(in, later)
		if diff := cmp.Diff(m.Status, again); diff != "" {
			t.Errorf("a second computation changed the status (-first +second):\n%s", diff)
		}
	})

	t.Run("a flip moves the transition time, foreign conditions stay", func(t *testing.T) {
		t.Parallel()
		m := member(withID("a1", true))
		m.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ConditionVersionDrifted, Status: metav1.ConditionFalse, Reason: "VersionMatched", LastTransitionTime: now}}
		first := computeStatus(statusInput{member: m, pod: pod(false)}, now)
		m.Status = first
		second := computeStatus(statusInput{member: m, pod: pod(true)}, later)
		ready := meta.FindStatusCondition(second.Conditions, etcdv1alpha2.ConditionReady)
		if ready.Status != metav1.ConditionTrue || !ready.LastTransitionTime.Equal(&later) {
			t.Errorf("Ready = %+v, want True since %v", ready, later)
		}
		if meta.FindStatusCondition(second.Conditions, etcdv1alpha2.ConditionVersionDrifted) == nil {
			t.Error("VersionDrifted was dropped")
		}
	})

	t.Run("Memory member without a PVC name; lost Pod marks data lost", func(t *testing.T) {
		t.Parallel()
		m := member(memory, withID("a1", true))
		m.Status.PodUID = "old"
		got := computeStatus(statusInput{member: m, pvcOwned: true, notes: notes{memoryPodLost: true}}, now)
		if got.PVCName != "" {
			t.Errorf("pvcName = %q, want empty for Memory", got.PVCName)
		}
		if c := meta.FindStatusCondition(got.Conditions, etcdv1alpha2.ConditionHealthy); c == nil || c.Reason != ReasonDataLost || c.Status != metav1.ConditionFalse {
			t.Errorf("Healthy = %+v, want False/%s", c, ReasonDataLost)
		}
	})
}

func TestVersionDriftedCondition(t *testing.T) {
	t.Parallel()
	running := func(v string) func(*etcdv1alpha2.EtcdMember) {
		return func(m *etcdv1alpha2.EtcdMember) { m.Status.Version = v }
	}
	if _, ok := versionDriftedCondition(member()); ok {
		t.Error("VersionDrifted set before any version was reported")
	}
	if c, ok := versionDriftedCondition(member(running("3.6.5"))); !ok || c.status != metav1.ConditionFalse || c.reason != ReasonVersionMatched {
		t.Errorf("matching version: %+v", c)
	}
	if c, ok := versionDriftedCondition(member(running("3.5.21"))); !ok || c.status != metav1.ConditionTrue || c.reason != ReasonVersionMismatch {
		t.Errorf("older running version: %+v", c)
	}
}

const schedulerMsg = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."

// unschedulablePod makes the Pod Pending with the scheduler's PodScheduled=False/Unschedulable
// since the given time.
func unschedulablePod(since time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: schedulerMsg, LastTransitionTime: metav1.NewTime(since)})
	}
}

// TestNewlyFailedAnnouncesTransitionsOnly: one MemberFailed Event when Healthy turns False or
// changes its reason while False, none while it stays so, none for recoveries.
func TestNewlyFailedAnnouncesTransitionsOnly(t *testing.T) {
	t.Parallel()
	healthy := func(st metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: etcdv1alpha2.ConditionHealthy, Status: st, Reason: reason, Message: msg}}
	}
	unsched := healthy(metav1.ConditionFalse, "Unschedulable", "the Pod cannot be scheduled: a")
	for name, tc := range map[string]struct {
		prev, next []metav1.Condition
		want       bool
	}{
		"no condition → Unschedulable":                  {nil, unsched, true},
		"Healthy → Unschedulable":                       {healthy(metav1.ConditionTrue, "Healthy", "x"), unsched, true},
		"Unschedulable, scheduler's words change":       {unsched, healthy(metav1.ConditionFalse, "Unschedulable", "the Pod cannot be scheduled: b"), false},
		"Unschedulable → Healthy":                       {unsched, healthy(metav1.ConditionTrue, "Healthy", "x"), false},
		"no condition → DataLost":                       {nil, healthy(metav1.ConditionFalse, "DataLost", "x"), true},
		"Healthy → CrashLoop":                           {healthy(metav1.ConditionTrue, "Healthy", "x"), healthy(metav1.ConditionFalse, "CrashLoop", "y"), true},
		"StartFailed → CrashLoop: a new classification": {healthy(metav1.ConditionFalse, "StartFailed", "x"), healthy(metav1.ConditionFalse, "CrashLoop", "y"), true},
		"Healthy → Unreachable (Unknown)":               {healthy(metav1.ConditionTrue, "Healthy", "x"), healthy(metav1.ConditionUnknown, "Unreachable", "y"), false},
		"Healthy message changes (OOMKilled noted)":     {healthy(metav1.ConditionTrue, "Healthy", "x"), healthy(metav1.ConditionTrue, "Healthy", "OOMKilled"), false},
	} {
		if got := newlyFailed(tc.prev, tc.next) != nil; got != tc.want {
			t.Errorf("%s: announce = %v, want %v", name, got, tc.want)
		}
	}
}
