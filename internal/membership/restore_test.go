package membership

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// restoringSeed is a seed whose Pod does not run because its restore init container failed.
func restoringSeed(failure string) Member {
	return with(mem("s", 1), func(m *Member) {
		m.Bootstrap, m.PodRunning, m.PodReady, m.Ready, m.RestoreFailure = true, false, false, false, failure
	})
}

// TestRestoreFailedConditions: a seed whose restore failed makes the forming cluster
// Available=False, Degraded=True and Progressing=False, all RestoreFailed with the agent's reason
// and message; the planner waits on watches (no polling). Without a failure the seed is only
// awaited; once the cluster has its ID, no restore failure is reported at all.
func TestRestoreFailedConditions(t *testing.T) {
	t.Parallel()
	failure := "ChecksumMismatch: the snapshot's SHA-256 is sha256:aa, but the .sha256 sidecar says sha256:bb; nothing was restored"
	s := Scope{Target: 3, Members: []Member{restoringSeed(failure)}}
	a := Next(s)
	if a.Kind != KindWait || a.Reason != ReasonRestoreFailed || a.RequeueAfter != 0 || !strings.Contains(a.Message, failure) {
		t.Fatalf("Next = %+v, want a RestoreFailed wait on watches quoting the failure", a)
	}
	conds := Conditions(ConditionInput{Scope: &s, Action: a, Generation: 1})
	for _, want := range []struct {
		t  string
		st metav1.ConditionStatus
	}{{etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse}, {etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse},
		{etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue}} {
		c := meta.FindStatusCondition(conds, want.t)
		if c == nil || c.Status != want.st || c.Reason != ReasonRestoreFailed || !strings.Contains(c.Message, "seed s could not be restored") ||
			!strings.Contains(c.Message, failure) {
			t.Errorf("%s = %+v, want %s/RestoreFailed quoting the failure", want.t, c, want.st)
		}
	}

	s.Members[0].RestoreFailure = ""
	if a := Next(s); a.Reason != ReasonWaitingForSeed || a.RequeueAfter != MembershipPoll {
		t.Errorf("restoring, no failure yet: Next = %+v, want WaitingForSeed", a)
	}
	if c := meta.FindStatusCondition(Conditions(ConditionInput{Scope: &s, Action: Next(s)}), etcdv1alpha2.ConditionAvailable); c.Reason != ReasonBootstrapping {
		t.Errorf("restoring, no failure yet: Available = %+v", c)
	}

	formed := steady3()
	formed.Members[0].Bootstrap, formed.Members[0].RestoreFailure = true, failure
	for _, c := range Conditions(ConditionInput{Scope: &formed, Action: Next(formed)}) {
		if c.Reason == ReasonRestoreFailed {
			t.Errorf("formed cluster: %s = %+v", c.Type, c)
		}
	}
}

// TestRestoringSeedStagesTheSecondMember: while the seed restores, a cluster that stages joins
// prepares its second member as for any starting seed; the failure stays visible in Available.
func TestRestoringSeedStagesTheSecondMember(t *testing.T) {
	t.Parallel()
	s := Scope{Target: 3, Staging: true, Members: []Member{restoringSeed("NoSpace: the volume is small")}}
	a := Next(s)
	if a.Kind != KindCreateMember {
		t.Fatalf("Next = %+v, want the second member prepared", a)
	}
	if c := meta.FindStatusCondition(Conditions(ConditionInput{Scope: &s, Action: a}), etcdv1alpha2.ConditionAvailable); c.Reason != ReasonRestoreFailed {
		t.Errorf("Available = %+v, want RestoreFailed", c)
	}
}
