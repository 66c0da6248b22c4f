package membership

import (
	"strings"
	"testing"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
)

// damagedMessage is the member controller's Healthy message for damaged data.
const damagedMessage = "etcd failed at each of 2 starts since its Pod was recreated with the template it ran before, on the data dir it wrote (last exit: etcd exited with a panic, pattern panic); the data is taken as damaged and the member is replaced"

// issue15 is issue #15's cluster: 3 voters, b's Pod recreated with the template it ran, its
// etcd panicking at every boot, so it neither answers nor is Ready.
func issue15(reason, message string) Scope {
	s := steady3()
	for i := range s.Members {
		s.Members[i].WantHash, s.Members[i].AuthorisedHash, s.Members[i].PodHash, s.Members[i].ReadyHash = "h1", "h1", "h1", "h1"
	}
	s.Members[1] = with(s.Members[1], func(m *Member) {
		m.Ready, m.PodReady, m.Unhealthy, m.HealthyReason, m.HealthyMessage = false, false, true, reason, message
	})
	delete(s.Etcd.Statuses, 2)
	return s
}

// TestReplaceDamagedMember: a member the member controller calls DataCorrupt for damaged data
// is replaced through the quorum gate with its cause and message, and the cluster never
// speaks of a roll.
func TestReplaceDamagedMember(t *testing.T) {
	t.Parallel()
	s := issue15(health.ReasonDataCorrupt, damagedMessage)
	a := Next(s)
	if a.Kind != KindRemove || a.Member != "b" || a.RemovalReason != health.ReasonDataCorrupt || !strings.Contains(a.Message, damagedMessage) {
		t.Fatalf("Next = %+v, want b removed as DataCorrupt quoting its Healthy message", a)
	}
	for _, c := range Conditions(ConditionInput{Scope: &s, Action: a}) {
		if strings.Contains(c.Message, "roll") {
			t.Errorf("%s says %q, but no roll is in progress", c.Type, c.Message)
		}
	}

	// Without quorum to spare, the gate holds it.
	s.Members[2] = with(s.Members[2], func(m *Member) { m.Ready, m.PodReady = false, false })
	delete(s.Etcd.Statuses, 3)
	if a := Next(s); a.Kind == KindRemove {
		t.Fatalf("removed b with c down too: %+v", a)
	}
}

// TestRollHaltedOnlyDuringARoll: "roll halted … correct the spec" is said of a StartFailed
// voter only when its Pod runs a template it never was Ready with (a roll's). One whose Pod
// runs the template it ran before (a status written by an older operator, or any other path
// to StartFailed) is reported as not healthy, and nothing waits for a corrected spec.
func TestRollHaltedOnlyDuringARoll(t *testing.T) {
	t.Parallel()
	const msg = "the Pod has not become Ready within memberStartGrace (5m0s) with the member's current template"
	for name, tc := range map[string]struct {
		readyHash string
		halted    bool
	}{
		"a roll's new template":               {readyHash: "h0", halted: true},
		"no record (an older operator's)":     {readyHash: "", halted: true},
		"the template it ran: no roll at all": {readyHash: "h1", halted: false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := issue15(health.ReasonStartFailed, msg)
			s.Members[1].ReadyHash = tc.readyHash
			a := Next(s)
			conds := Conditions(ConditionInput{Scope: &s, Action: a})
			var degraded, progressing string
			for _, c := range conds {
				switch c.Type {
				case etcdv1alpha2.ConditionDegraded:
					degraded = c.Reason + ": " + c.Message
				case etcdv1alpha2.ConditionProgressing:
					progressing = c.Reason + ": " + c.Message
				}
			}
			halted := strings.Contains(a.Message, "roll halted") || strings.Contains(progressing, "roll halted")
			if halted != tc.halted || strings.Contains(degraded, "rolling update is halted") != tc.halted ||
				strings.HasPrefix(degraded, ReasonMemberStartFailed) != tc.halted {
				t.Fatalf("halted = %v, want %v:\naction %+v\nProgressing %s\nDegraded %s", halted, tc.halted, a, progressing, degraded)
			}
			if !tc.halted && !strings.Contains(degraded, "b") {
				t.Fatalf("Degraded does not name b: %s", degraded)
			}
		})
	}
}
