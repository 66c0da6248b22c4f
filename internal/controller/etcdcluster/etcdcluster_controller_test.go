package etcdcluster

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func typesUID(s string) types.UID { return types.UID(s) }

func TestClassify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	res, err := classify(ctx, ctrl.Result{}, &errWaiting{after: 2 * time.Second, msg: "x"})
	if err != nil || res.RequeueAfter != 2*time.Second {
		t.Errorf("waiting: %v %v", res, err)
	}
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "etcdmembers"}, "m", errors.New("changed"))
	res, err = classify(ctx, ctrl.Result{}, conflict)
	if err != nil || res.RequeueAfter != conflictRetry {
		t.Errorf("conflict: %v %v", res, err)
	}
	boom := errors.New("boom")
	if _, err = classify(ctx, ctrl.Result{}, boom); !errors.Is(err, boom) {
		t.Errorf("transient: %v", err)
	}
}

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
