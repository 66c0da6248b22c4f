package etcdmember

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
)

// readyWith sets status.readyTemplateHash as a previous pass recorded it.
func readyWith(hash string) func(*etcdv1alpha2.EtcdMember) {
	return func(m *etcdv1alpha2.EtcdMember) { m.Status.ReadyTemplateHash = hash }
}

// reported sets the version etcd reported for the member.
func reported(m *etcdv1alpha2.EtcdMember) { m.Status.Version = m.Spec.Version }

// TestMemberHealthDamagedData: issue #15. A voter whose Pod was deleted and recreated with the
// template it ran, and whose etcd panics at every start on its damaged data dir ("cannot use
// none as id", no known pattern), is DataCorrupt at its second failed start; the same failures
// with a roll's new template are not (a start failure, later), nor before a second start.
func TestMemberHealthDamagedData(t *testing.T) {
	t.Parallel()
	garbage := &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: fixtureMessage(t, "damage-wal-garbage-header")}
	notReadySince := readyState(metav1.ConditionFalse, ReasonPodNotReady, healthNow.Add(-30*time.Second))
	recreated := func(restarts int32) *corev1.Pod {
		return pod(false, started(healthNow.Add(-20*time.Second), crashLooping(restarts, garbage)), func(p *corev1.Pod) { p.UID = "pod-2" })
	}
	runHealthRows(t, map[string]healthRow{
		"second failed start with the template it ran": {
			in:         statusInput{member: member(currentTemplate, withID("a1", true), reported, readyWith("h1"), notReadySince), pod: recreated(1)},
			wantStatus: metav1.ConditionFalse, wantReason: health.ReasonDataCorrupt,
			wantMsg: []string{"2 starts", "template it ran before", "damaged", "pattern panic"},
		},
		// The pass that first sees a Pod the member was Ready in not Ready still has Ready=True
		// for it: that Pod was Ready, its exits are a crash loop's, not damaged data's.
		"the first pass over a Pod that was Ready": {
			in: statusInput{member: member(currentTemplate, withID("a1", true), reported, readyWith("h1"), recordedPod("pod-2"),
				readyState(metav1.ConditionTrue, ReasonPodReady, healthNow.Add(-time.Hour))), pod: recreated(1)},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy,
		},
		"first failed start": {
			in:         statusInput{member: member(currentTemplate, withID("a1", true), reported, readyWith("h1"), notReadySince), pod: recreated(0)},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy,
			wantRecheck: 150 * time.Second, // memberFailureGrace from the member turning not Ready
		},
		"a roll's new template": {
			in:         statusInput{member: member(currentTemplate, withID("a1", true), reported, readyWith("h0"), notReadySince), pod: recreated(1)},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy,
			wantRecheck: 280 * time.Second, // memberStartGrace from the Pod's creation
		},
		"no record of the template it ran": {
			in:         statusInput{member: member(currentTemplate, withID("a1", true), reported, notReadySince), pod: recreated(1)},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy,
			wantRecheck: 280 * time.Second,
		},
		"a new member's first Pod: no data expected": {
			in:         statusInput{member: member(currentTemplate, readyWith("h1"), notReadySince), pod: recreated(1)},
			wantStatus: metav1.ConditionTrue, wantReason: health.ReasonHealthy,
			wantRecheck: 150 * time.Second,
		},
	})
}

// TestReadyTemplateHash: the Ready Pod's template is recorded, and the record outlives the Pod.
func TestReadyTemplateHash(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in   statusInput
		want string
	}{
		"Ready Pod":                      {statusInput{member: member(readyWith("h0")), pod: pod(true)}, "h1"},
		"Pod not Ready: kept":            {statusInput{member: member(readyWith("h0")), pod: pod(false)}, "h0"},
		"no Pod: kept":                   {statusInput{member: member(readyWith("h0"))}, "h0"},
		"Ready Pod without a hash: kept": {statusInput{member: member(readyWith("h0")), pod: pod(true, func(p *corev1.Pod) { p.Annotations = nil })}, "h0"},
		"Ready Pod being deleted: kept":  {statusInput{member: member(readyWith("h0")), pod: pod(true, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: healthNow} })}, "h0"},
		"never Ready: nothing to record": {statusInput{member: member(), pod: pod(false)}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := readyTemplateHash(tc.in); got != tc.want {
				t.Errorf("readyTemplateHash = %q, want %q", got, tc.want)
			}
		})
	}
}
