package etcdcluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestDefaultJitterStaysWithinTenPercent(t *testing.T) {
	t.Parallel()
	for range 1000 {
		if d := defaultJitter(healthResync); d < 27*time.Second || d > 33*time.Second {
			t.Fatalf("jitter %s outside 30 s ± 10 %%", d)
		}
	}
}

func TestDeadlineChangedPredicate(t *testing.T) {
	t.Parallel()
	p := deadlineChanged()
	old := testCluster()
	moved := old.DeepCopy()
	moved.Status.ProgressDeadline = &metav1.Time{Time: time.Unix(100, 0)}
	if !p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: moved}) {
		t.Error("arming a deadline does not pass")
	}
	other := moved.DeepCopy()
	other.Status.ReadyMembers = 3
	if p.Update(event.UpdateEvent{ObjectOld: moved, ObjectNew: other}) {
		t.Error("an unrelated status change passes")
	}
	earlier := moved.DeepCopy()
	earlier.Status.ProgressDeadline = &metav1.Time{Time: time.Unix(1, 0)}
	if !p.Update(event.UpdateEvent{ObjectOld: moved, ObjectNew: earlier}) {
		t.Error("moving the deadline does not pass")
	}
}
