package health_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/health"
)

var (
	fuzzPhases  = []corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown}
	fuzzReasons = []string{health.ReasonHealthy, health.ReasonDataLost, health.ReasonDataCorrupt, health.ReasonCrashLoop,
		health.ReasonPodFailed, health.ReasonNodeLost, health.ReasonUnschedulable, health.ReasonStartFailed,
		health.ReasonRemovedFromCluster, health.ReasonUnreachable}
)

// FuzzClassify checks that Classify never panics, is deterministic, and keeps its promises
// whatever it is given: a known status and reason, a message, no force deletion, no negative
// recheck, and no replacement while the condition is True. flags packs the booleans, one bit
// each; times are offsets from a fixed instant in seconds.
func FuzzClassify(f *testing.F) {
	f.Add(uint32(0), uint8(2), "", "3.6", "", "", "", int32(0), int32(0), int64(0), int64(0), int64(0), int64(0), "44476c71caad08e6")
	f.Add(uint32(0b1), uint8(4), "Evicted", "3.5", "", "", "", int32(0), int32(0), int64(0), int64(0), int64(0), int64(0), "")
	f.Add(uint32(0b110000), uint8(2), "", "3.6", "Error", msgDBInvalid, msgDBInvalid, int32(2), int32(0), int64(-60), int64(0), int64(0), int64(0), "1")
	f.Add(uint32(0b10000), uint8(2), "", "3.7", "OOMKilled", "", "", int32(9), int32(0), int64(-3600), int64(0), int64(0), int64(0), "")
	f.Add(uint32(0b1000000000), uint8(1), "", "3.6", "", "", "", int32(0), int32(0), int64(0), int64(-400), int64(-400), int64(-400), "")
	f.Fuzz(func(t *testing.T, flags uint32, phase uint8, podReason, minor, termReason, lastMsg, prevMsg string,
		restarts, restartsAtFailure int32, failedAt, createdAt, deletedAt, nodeNotReadyAt int64, clusterID string,
	) {
		obs := fuzzObservation(fuzzInput{flags, phase, podReason, minor, termReason, lastMsg, prevMsg,
			restarts, restartsAtFailure, failedAt, createdAt, deletedAt, nodeNotReadyAt, clusterID})
		checkFuzzResult(t, obs)
	})
}

// fuzzInput is one fuzz input, named.
type fuzzInput struct {
	flags                                          uint32
	phase                                          uint8
	podReason, minor, termReason, lastMsg, prevMsg string
	restarts, restartsAtFailure                    int32
	failedAt, createdAt, deletedAt, nodeNotReadyAt int64
	clusterID                                      string
}

// fuzzObservation builds an observation from a fuzz input.
func fuzzObservation(in fuzzInput) health.Observation {
	bit := func(i uint) bool { return in.flags&(1<<i) != 0 }
	at := func(s int64) time.Time {
		if s == 0 {
			return time.Time{}
		}
		return t0.Add(time.Duration(s%(1<<31)) * time.Second)
	}
	obs := health.Observation{
		Now: t0, Minor: in.minor, ClusterID: in.clusterID, Memory: bit(0), Dormant: bit(14),
		Etcd: health.EtcdView{
			MemberListKnown: bit(1), Added: bit(2), InMemberList: bit(3),
			CorruptAlarm: bit(6), Unreachable: bit(7), Lagging: bit(8),
		},
		FirstFailure: health.Failure{At: at(in.failedAt)},
	}
	if bit(24) {
		obs.FirstFailure.RestartCount = &in.restartsAtFailure
	}
	if bit(13) {
		obs.RecordedPodUID = "uid-1"
	}
	if bit(12) {
		obs.PVNode = &health.Node{Name: "pv-node", Gone: bit(15), Ready: bit(16), NotReadySince: at(in.nodeNotReadyAt)}
	}
	if bit(4) {
		return obs
	}
	p := &health.Pod{
		UID: "uid-1", CreatedAt: at(in.createdAt), Phase: fuzzPhases[int(in.phase)%len(fuzzPhases)], Reason: in.podReason,
		Ready: bit(5), DeletionTimestamp: at(in.deletedAt), Unschedulable: bit(9), UnschedulableSince: at(in.createdAt),
		TemplateCurrent: bit(10), WasReadyWithTemplate: bit(11),
		Container: health.Container{RestartCount: in.restarts},
	}
	if bit(17) {
		p.UID = "uid-2"
	}
	if bit(18) {
		p.Node = &health.Node{Name: "node", Gone: bit(19), Ready: bit(20), Unreachable: bit(21), NotReadySince: at(in.nodeNotReadyAt)}
	}
	if bit(22) {
		p.Container.LastTermination = &health.Termination{ExitCode: 1, Reason: in.termReason, Message: in.lastMsg}
	}
	if bit(23) {
		p.Container.PreviousTermination = &health.Termination{ExitCode: 1, Reason: in.termReason, Message: in.prevMsg}
	}
	obs.Pod = p
	return obs
}

// checkFuzzResult classifies obs twice and checks the promises every result keeps.
func checkFuzzResult(t *testing.T, obs health.Observation) {
	t.Helper()
	got := health.Classify(obs)
	if again := health.Classify(obs); !cmp.Equal(got, again) {
		t.Fatalf("not deterministic:\n%+v\n%+v", got, again)
	}
	if !slices.Contains([]metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}, got.Status) {
		t.Fatalf("status %q", got.Status)
	}
	if !slices.Contains(fuzzReasons, got.Reason) {
		t.Fatalf("reason %q", got.Reason)
	}
	if got.Message == "" || got.ForceDelete || got.RecheckAfter < 0 {
		t.Fatalf("broken result %+v", got)
	}
	if got.Status == metav1.ConditionTrue && got.Action == health.ActionReplace {
		t.Fatalf("replacement of a healthy member: %+v", got)
	}
	if got.Action == health.ActionReplace && obs.Pod != nil && obs.Pod.Container.LastTermination != nil &&
		obs.Pod.Container.LastTermination.Reason == "OOMKilled" && got.Reason == health.ReasonCrashLoop {
		t.Fatalf("an OOMKilled member was replaced as a crash loop: %+v", got)
	}
}
