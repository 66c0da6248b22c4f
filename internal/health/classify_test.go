package health_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/health"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// Termination messages quoted from the captured fixtures (one line each is enough to match).
const (
	msgDBInvalid         = `{"level":"panic","msg":"failed to open database","path":"/var/lib/etcd/member/snap/db","error":"invalid database"}` + "\npanic: failed to open database\n"
	msgAlreadyBootstrap  = `{"level":"fatal","msg":"discovery failed","error":"member 3bb3acdbf255b97e has already been bootstrapped"}` + "\n"
	msgMembershipChanged = `{"level":"fatal","msg":"discovery failed","error":"error validating peerURLs {ClusterID:96c4a6b877595549}: member count is unequal"}` + "\n"
	msgGenericPanic      = "panic: runtime error: invalid memory address or nil pointer dereference\n"
)

// running is an observation of a healthy PVC member: Ready Pod on a Ready node, in etcd's
// member list.
func running() health.Observation {
	return health.Observation{
		Now:            t0,
		Minor:          "3.6",
		ClusterID:      "44476c71caad08e6",
		RecordedPodUID: "uid-1",
		Etcd:           health.EtcdView{MemberListKnown: true, Added: true, InMemberList: true},
		Pod: &health.Pod{
			UID: "uid-1", CreatedAt: t0.Add(-time.Hour), Phase: corev1.PodRunning, Ready: true,
			TemplateCurrent: true, WasReadyWithTemplate: true,
			Node:      &health.Node{Name: "node-a", Ready: true},
			Container: health.Container{Running: true},
		},
	}
}

func memory(o health.Observation) health.Observation { o.Memory = true; return o }

// crashing makes the Pod's container crash-loop: not Ready since failedAgo, restarts so far.
func crashing(o health.Observation, failedAgo time.Duration, restarts int32, last, prev *health.Termination) health.Observation {
	p := *o.Pod
	p.Ready = false
	p.Container = health.Container{WaitingReason: "CrashLoopBackOff", RestartCount: restarts, LastTermination: last, PreviousTermination: prev}
	o.Pod = &p
	o.FirstFailure = health.Failure{At: t0.Add(-failedAgo), RestartCount: ptr.To[int32](0)}
	return o
}

func exit(code int32, reason, msg string) *health.Termination {
	return &health.Termination{ExitCode: code, Reason: reason, Message: msg}
}

func with(o health.Observation, f func(*health.Observation)) health.Observation {
	if o.Pod != nil {
		p := *o.Pod
		o.Pod = &p
	}
	f(&o)
	return o
}

// want is the part of a Result a case checks; Message is checked for substrings.
type want struct {
	status   metav1.ConditionStatus
	reason   string
	action   health.Action
	degraded string
	recheck  time.Duration
	contains []string
}

// TestClassify has one case per failure row (named "§9 …" after the specification section that
// first listed them; the rows are now in docs/design/healing.md, "Classification") plus the edges
// around each grace and the precedence between rows.
func TestClassify(t *testing.T) {
	t.Parallel()
	T, F, U := metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	cases := []struct {
		name string
		obs  health.Observation
		want want
	}{
		{"healthy", running(), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, contains: []string{"running"}}},

		// Memory member's Pod deleted, evicted, Failed, or replaced.
		{"§9 Memory Pod deleted", with(memory(running()), func(o *health.Observation) { o.Pod = nil }),
			want{status: F, reason: health.ReasonDataLost, action: health.ActionReplace, contains: []string{"deleted", "never restarted"}}},
		{"§9 Memory Pod evicted", with(memory(running()), func(o *health.Observation) { o.Pod.Phase, o.Pod.Reason = corev1.PodFailed, "Evicted" }),
			want{status: F, reason: health.ReasonDataLost, action: health.ActionReplace, contains: []string{"evicted"}}},
		{"§9 Memory Pod Failed", with(memory(running()), func(o *health.Observation) { o.Pod.Phase = corev1.PodFailed }),
			want{status: F, reason: health.ReasonDataLost, action: health.ActionReplace, contains: []string{"failed"}}},
		{"§9 Memory Pod replaced (UID changed)", with(memory(running()), func(o *health.Observation) { o.Pod.UID = "uid-2" }),
			want{status: F, reason: health.ReasonDataLost, action: health.ActionReplace, contains: []string{"UID changed"}}},
		{"Memory Pod being deleted", with(memory(running()), func(o *health.Observation) { o.Pod.DeletionTimestamp = t0 }),
			want{status: F, reason: health.ReasonDataLost, action: health.ActionReplace}},
		{"Memory member before its first Pod", with(memory(running()), func(o *health.Observation) { o.Pod, o.RecordedPodUID = nil, "" }),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, contains: []string{"no Pod yet"}}},
		{"Memory data loss outranks a CORRUPT alarm", with(memory(running()), func(o *health.Observation) { o.Pod = nil; o.Etcd.CorruptAlarm = true }),
			want{status: F, reason: health.ReasonDataLost, action: health.ActionReplace}},

		// PVC member's Pod Failed / deleted.
		{"§9 PVC Pod Failed", with(running(), func(o *health.Observation) {
			o.Pod.Phase, o.Pod.Reason, o.Pod.Ready = corev1.PodFailed, "Shutdown", false
		}),
			want{status: F, reason: health.ReasonPodFailed, action: health.ActionRecreatePod, contains: []string{"Shutdown", "same volume and identity"}}},
		{"§9 PVC Pod deleted", with(running(), func(o *health.Observation) { o.Pod = nil }),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionRecreatePod}},

		// Classified fatal exits.
		{"§9 classified fatal exit: corrupt bbolt twice", crashing(running(), time.Minute, 2, exit(2, "Error", msgDBInvalid), exit(2, "Error", msgDBInvalid)),
			want{status: F, reason: health.ReasonDataCorrupt, action: health.ActionReplace, contains: []string{"bbolt-invalid"}}},
		{"§9 classified fatal exit: data lost twice", crashing(running(), time.Minute, 2, exit(1, "Error", msgAlreadyBootstrap), exit(1, "Error", msgAlreadyBootstrap)),
			want{status: F, reason: health.ReasonDataLost, action: health.ActionReplace, contains: []string{"already-bootstrapped"}}},
		{"§9 classified fatal exit: removed twice", crashing(running(), time.Minute, 2, exit(1, "Error", msgMembershipChanged), exit(1, "Error", msgMembershipChanged)),
			want{status: F, reason: health.ReasonRemovedFromCluster, action: health.ActionReplace, contains: []string{"membership-mismatch"}}},
		{"classified fatal exits of a member that is Ready again", with(crashing(running(), time.Minute, 2, exit(2, "Error", msgDBInvalid), exit(2, "Error", msgDBInvalid)), func(o *health.Observation) {
			o.Pod.Ready, o.Pod.Container.Running, o.FirstFailure = true, true, health.Failure{}
		}), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, contains: []string{"bbolt-invalid"}}},
		{"classified fatal exit once is not enough", crashing(running(), time.Minute, 1, exit(2, "Error", msgDBInvalid), nil),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: 2 * time.Minute, contains: []string{"bbolt-invalid", "next exit"}}},
		{"two different fatal exits are not consecutive identical ones", crashing(running(), time.Minute, 2, exit(2, "Error", msgDBInvalid), exit(1, "Error", msgAlreadyBootstrap)),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: 2 * time.Minute}},
		{"fatal exit of an unknown etcd minor is not trusted", with(crashing(running(), time.Minute, 2, exit(2, "Error", msgDBInvalid), exit(2, "Error", msgDBInvalid)), func(o *health.Observation) { o.Minor = "3.9" }),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: 2 * time.Minute}},

		// CORRUPT alarm.
		{"§9 CORRUPT alarm naming the member", with(running(), func(o *health.Observation) { o.Etcd.CorruptAlarm = true }),
			want{status: F, reason: health.ReasonDataCorrupt, action: health.ActionReplace, contains: []string{"CORRUPT", "disarmed"}}},
		{"keyspace hash differs from the majority", with(running(), func(o *health.Observation) { o.Etcd.HashDiffersAt = 40 }),
			want{status: F, reason: health.ReasonDataCorrupt, action: health.ActionReplace, contains: []string{"keyspace hash differs from the majority at revision 40"}}},
		{"keyspace hash differs while the Pod is not Ready", with(crashing(running(), time.Minute, 1, exit(2, "Error", msgGenericPanic), nil), func(o *health.Observation) { o.Etcd.HashDiffersAt = 40 }),
			want{status: F, reason: health.ReasonDataCorrupt, action: health.ActionReplace, contains: []string{"revision 40"}}},

		// Unclassified crash loop.
		{"§9 unclassified crash loop: not Ready for memberFailureGrace", crashing(running(), 3*time.Minute, 1, exit(2, "Error", msgGenericPanic), nil),
			want{status: F, reason: health.ReasonCrashLoop, action: health.ActionReplace, contains: []string{"memberFailureGrace (3m0s)", "pattern panic"}}},
		{"unclassified crash loop: 3 restarts within 10 min", crashing(running(), time.Minute, 3, exit(1, "Error", ""), nil),
			want{status: F, reason: health.ReasonCrashLoop, action: health.ActionReplace, contains: []string{"restarted 3 times"}}},
		{"restarts before the failure do not count", with(crashing(running(), time.Minute, 50, exit(1, "Error", ""), nil), func(o *health.Observation) {
			o.FirstFailure.RestartCount = ptr.To[int32](48)
		}), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: 2 * time.Minute}},
		{"restart count at failure unknown: only the grace counts", with(crashing(running(), time.Minute, 50, exit(1, "Error", ""), nil), func(o *health.Observation) {
			o.FirstFailure.RestartCount = nil
		}), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: 2 * time.Minute}},
		{"restarts outside the 10 min window", with(crashing(running(), 11*time.Minute, 5, exit(1, "Error", ""), nil), func(o *health.Observation) {
			o.Pod.WasReadyWithTemplate = true
		}), want{status: F, reason: health.ReasonCrashLoop, action: health.ActionReplace, contains: []string{"memberFailureGrace"}}},
		{"not Ready just under memberFailureGrace", crashing(running(), 3*time.Minute-time.Second, 1, exit(1, "Error", ""), nil),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: time.Second, contains: []string{"not Ready yet"}}},
		{"crash loop needs a failure start", with(crashing(running(), time.Hour, 1, nil, nil), func(o *health.Observation) { o.FirstFailure = health.Failure{} }),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone}},
		{"misconfiguration waits for the crash-loop grace", crashing(running(), 4*time.Minute, 1,
			exit(1, "Error", `{"level":"fatal","msg":"discovery failed","error":"--initial-cluster has m0=http://a:2380 but missing from --initial-advertise-peer-urls=http://b:2380"}`), nil),
			want{status: F, reason: health.ReasonCrashLoop, action: health.ActionReplace, contains: []string{"peer-url-mismatch"}}},
		{"custom memberFailureGrace", with(crashing(running(), 2*time.Minute, 1, nil, nil), func(o *health.Observation) { o.Graces.MemberFailure = time.Minute }),
			want{status: F, reason: health.ReasonCrashLoop, action: health.ActionReplace, contains: []string{"(1m0s)"}}},

		// OOMKilled.
		{"§9 OOMKilled loop is not replaced", crashing(running(), time.Hour, 9, exit(137, "OOMKilled", ""), exit(137, "OOMKilled", "")),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, degraded: health.DegradedMembersUnhealthy, contains: []string{"OOMKilled", "not replaced", "resources.limits.memory"}}},

		// New template never Ready.
		{"§9 new template never Ready for memberStartGrace", with(crashing(running(), 10*time.Minute, 0, nil, nil), func(o *health.Observation) {
			o.Pod.WasReadyWithTemplate, o.Pod.CreatedAt = false, t0.Add(-5*time.Minute)
		}), want{status: F, reason: health.ReasonStartFailed, action: health.ActionHaltRollout, degraded: health.DegradedMemberStartFailed, contains: []string{"memberStartGrace (5m0s)", "rollout halts"}}},
		{"new template still within memberStartGrace", with(crashing(running(), time.Minute, 0, nil, nil), func(o *health.Observation) {
			o.Pod.WasReadyWithTemplate, o.Pod.CreatedAt = false, t0.Add(-time.Minute)
		}), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: 4 * time.Minute}},
		// A staged member's Pod waits, by design, for the member's add: never a start failure.
		{"staged Pod waiting to be added past memberStartGrace", with(crashing(running(), 10*time.Minute, 0, nil, nil), func(o *health.Observation) {
			o.Pod.WasReadyWithTemplate, o.Pod.CreatedAt, o.Pod.AwaitingMembership = false, t0.Add(-time.Hour), true
		}), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, contains: []string{"guard starts etcd once the member is added"}}},

		// Pending on a lost node.
		{"§9 Pending with its volume on a gone node", with(running(), func(o *health.Observation) {
			o.Pod.Phase, o.Pod.Ready, o.Pod.Node = corev1.PodPending, false, nil
			o.PVNode = &health.Node{Name: "node-b", Gone: true}
		}), want{status: F, reason: health.ReasonNodeLost, action: health.ActionReplace, contains: []string{"node-b", "new volume"}}},
		{"Pending with its volume on a node NotReady for 5 min", with(running(), func(o *health.Observation) {
			o.Pod.Phase, o.Pod.Ready, o.Pod.Node = corev1.PodPending, false, nil
			o.PVNode = &health.Node{Name: "node-b", NotReadySince: t0.Add(-5 * time.Minute)}
		}), want{status: F, reason: health.ReasonNodeLost, action: health.ActionReplace}},
		{"Pending with its volume on a node NotReady for 2 min", with(running(), func(o *health.Observation) {
			o.Pod.Phase, o.Pod.Ready, o.Pod.Node = corev1.PodPending, false, nil
			o.PVNode = &health.Node{Name: "node-b", NotReadySince: t0.Add(-2 * time.Minute)}
		}), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: 3 * time.Minute}},

		// Pending for other reasons.
		{"§9 Pending, unschedulable for 5 min", with(running(), func(o *health.Observation) {
			o.Pod.Phase, o.Pod.Ready, o.Pod.Node = corev1.PodPending, false, nil
			o.Pod.Unschedulable, o.Pod.UnschedulableSince = true, t0.Add(-5*time.Minute)
			o.Pod.SchedulingMessage = "0/3 nodes are available: 3 Insufficient memory."
		}), want{status: F, reason: health.ReasonUnschedulable, action: health.ActionNone, degraded: health.DegradedMemberUnschedulable, contains: []string{"Insufficient memory", "no replacement"}}},
		{"Pending, unschedulable for 1 min", with(running(), func(o *health.Observation) {
			o.Pod.Phase, o.Pod.Ready, o.Pod.Node = corev1.PodPending, false, nil
			o.Pod.Unschedulable, o.Pod.UnschedulableSince = true, t0.Add(-time.Minute)
		}), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: 4 * time.Minute}},

		// Terminating on an unreachable node.
		{"§9 Terminating past grace + 5 min on an unreachable node", with(running(), func(o *health.Observation) {
			o.Pod.Ready, o.Pod.DeletionTimestamp = false, t0.Add(-5*time.Minute)
			o.Pod.Node = &health.Node{Name: "node-a", Unreachable: true, NotReadySince: t0.Add(-10 * time.Minute)}
		}), want{status: F, reason: health.ReasonNodeLost, action: health.ActionReplace, contains: []string{"node-a", "not force-deleted"}}},
		{"Terminating on an unreachable node, 2 min past grace", with(running(), func(o *health.Observation) {
			o.Pod.Ready, o.Pod.DeletionTimestamp = false, t0.Add(-2*time.Minute)
			o.Pod.Node = &health.Node{Name: "node-a", Unreachable: true}
		}), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, recheck: 3 * time.Minute}},
		{"Terminating on a Ready node is not node loss", with(running(), func(o *health.Observation) {
			o.Pod.DeletionTimestamp = t0.Add(-time.Hour)
		}), want{status: T, reason: health.ReasonHealthy, action: health.ActionNone}},

		// Removed by someone else.
		{"§9 member removed from etcd by someone else", with(running(), func(o *health.Observation) { o.Etcd.InMemberList = false }),
			want{status: F, reason: health.ReasonRemovedFromCluster, action: health.ActionReplace, contains: []string{"removed"}}},
		{"member list unknown: absence proves nothing", with(running(), func(o *health.Observation) { o.Etcd.InMemberList, o.Etcd.MemberListKnown = false, false }),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone}},
		{"member not added yet: absence is expected", with(running(), func(o *health.Observation) { o.Etcd.InMemberList, o.Etcd.Added = false, false }),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone}},

		// Unreachable.
		{"§9 Pod Ready but endpoint unreachable", with(running(), func(o *health.Observation) { o.Etcd.Unreachable = true }),
			want{status: U, reason: health.ReasonUnreachable, action: health.ActionNone, contains: []string{"nothing destructive"}}},

		// Lagging.
		{"§9 lagging member stays True", with(running(), func(o *health.Observation) { o.Etcd.Lagging = true }),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, contains: []string{"applied index is behind"}}},

		{"dormant member", with(running(), func(o *health.Observation) { o.Dormant, o.Pod = true, nil }),
			want{status: T, reason: health.ReasonHealthy, action: health.ActionNone, contains: []string{"dormant"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := health.Classify(tc.obs)
			gotW := want{status: got.Status, reason: got.Reason, action: got.Action, degraded: got.Degraded, recheck: got.RecheckAfter, contains: tc.want.contains}
			if diff := cmp.Diff(tc.want, gotW, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("Classify() mismatch (-want +got):\n%s\nmessage: %q", diff, got.Message)
			}
			for _, s := range tc.want.contains {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q does not contain %q", got.Message, s)
				}
			}
			if got.ForceDelete {
				t.Error("ForceDelete must never be set")
			}
			if again := health.Classify(tc.obs); !cmp.Equal(got, again) {
				t.Errorf("Classify is not deterministic:\n%+v\n%+v", got, again)
			}
		})
	}
}

// TestClassifyMessageIsStableOverTime: while nothing but the clock changes and no grace ends,
// the condition (status, reason, message) stays the same, so status is not rewritten every pass.
func TestClassifyMessageIsStableOverTime(t *testing.T) {
	t.Parallel()
	obs := crashing(running(), 10*time.Second, 1, exit(2, "Error", msgDBInvalid), nil)
	first := health.Classify(obs)
	obs.Now = obs.Now.Add(time.Minute)
	later := health.Classify(obs)
	if first.Status != later.Status || first.Reason != later.Reason || first.Message != later.Message {
		t.Fatalf("condition changed with the clock alone:\n%+v\n%+v", first, later)
	}
	if later.RecheckAfter >= first.RecheckAfter {
		t.Fatalf("recheck did not count down: %s then %s", first.RecheckAfter, later.RecheckAfter)
	}
}

// TestOrphanMember is the "etcd member without any CR or PVC" row (docs/design/membership-flows.md,
// "Orphan etcd members").
func TestOrphanMember(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		seen        time.Duration
		wantRemove  bool
		wantRecheck time.Duration
	}{
		{"§9 orphan etcd member, just seen", 0, false, time.Minute},
		{"orphan etcd member, 59 s", 59 * time.Second, false, time.Second},
		{"§9 orphan etcd member after orphanMemberGrace", time.Minute, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			remove, recheck := health.OrphanMember(t0.Add(-tc.seen), t0)
			if remove != tc.wantRemove || recheck != tc.wantRecheck {
				t.Fatalf("OrphanMember = %v, %s; want %v, %s", remove, recheck, tc.wantRemove, tc.wantRecheck)
			}
		})
	}
}

func TestMinor(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"3.6.16": "3.6", "v3.5.35": "3.5", "3.7": "3.7", "3": "3", "": ""} {
		if got := health.Minor(in); got != want {
			t.Errorf("Minor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTerminationMessageTail(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 100 {
		b.WriteString(strings.Repeat("x", i%10))
		b.WriteString("\n")
	}
	got := health.TerminationMessageTail([]byte(b.String()))
	if n := strings.Count(got, "\n"); n != health.TerminationMessageLogLines {
		t.Errorf("kept %d lines, want %d", n, health.TerminationMessageLogLines)
	}
	long := strings.Repeat("y", 5000)
	if got := health.TerminationMessageTail([]byte(long)); len(got) != health.TerminationMessageLogBytes {
		t.Errorf("kept %d bytes, want %d", len(got), health.TerminationMessageLogBytes)
	}
	if got := health.TerminationMessageTail([]byte("a\nb\n")); got != "a\nb\n" {
		t.Errorf("short log changed: %q", got)
	}
}
