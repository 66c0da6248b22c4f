package membership

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

func TestNoSpaceIsDegradedAlarmActiveAndNamesTheMember(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Etcd.Alarms = []etcdclient.Alarm{{MemberID: 3, Type: etcdclient.AlarmNoSpace}, {MemberID: 2, Type: etcdclient.AlarmNoSpace}}
	got := degraded(ConditionInput{Scope: &s})
	if got.Status != metav1.ConditionTrue || got.Reason != ReasonAlarmActive || !strings.Contains(got.Message, "raised by b, c") ||
		!strings.Contains(got.Message, "EtcdDefrag") {
		t.Errorf("Degraded = %+v", got)
	}
	// The alarm holds no step: a converged cluster stays Reconciled, so a defrag is admitted.
	if a := Next(s); a.Kind != KindNone || a.Reason != ReasonReconciled {
		t.Errorf("Next under NOSPACE = %+v", a)
	}
}

func TestRunningDefragHoldsEveryWritingStep(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Target = 4 // a scale-up is due
	if a := Next(s); !a.Mutates() {
		t.Fatalf("without a defrag the planner should act: %+v", a)
	}
	s.DefragRunning = []string{"nightly-1"}
	a := Next(s)
	if a.Kind != KindWait || a.Reason != ReasonWaitingForDefrag || !strings.Contains(a.Message, "nightly-1") || a.RequeueAfter == 0 {
		t.Errorf("with a Running defrag: %+v", a)
	}
	c := progressing(ConditionInput{Scope: &s, Action: a})
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonWaitingForDefrag {
		t.Errorf("Progressing = %+v", c)
	}
	steady := steady3()
	steady.DefragRunning = []string{"nightly-1"}
	if a := Next(steady); a.Kind != KindNone || a.Reason != ReasonReconciled {
		t.Errorf("a converged cluster stays Reconciled during a run: %+v", a)
	}
}
