package step

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRunStopsAtTheFirstStepThatEndsThePass(t *testing.T) {
	t.Parallel()
	var ran []string
	mk := func(name string, res Result, err error) Named {
		return Named{Name: name, Run: func(context.Context) (Result, error) { ran = append(ran, name); return res, err }}
	}
	var timed []string
	observe := func(name string, _ time.Duration) { timed = append(timed, name) }
	res, err := Run(context.Background(), observe, mk("a", Continue, nil), mk("b", Requeue(time.Second, "wait"), nil), mk("c", Continue, nil))
	if err != nil || !res.Done() || res.RequeueAfter() != time.Second || res.Reason() != "wait" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if fmt.Sprint(ran) != "[a b]" || fmt.Sprint(timed) != "[a b]" {
		t.Errorf("ran %v, timed %v; want a and b only", ran, timed)
	}
	ran = nil
	boom := errors.New("boom")
	if _, err := Run(context.Background(), nil, mk("a", Continue, boom), mk("b", Continue, nil)); !errors.Is(err, boom) || fmt.Sprint(ran) != "[a]" {
		t.Errorf("Run with a failing step = %v after %v", err, ran)
	}
	if res, err := Run(context.Background(), nil, mk("a", Continue, nil)); err != nil || res.Done() {
		t.Errorf("Run of steps that all continue = %+v, %v", res, err)
	}
}

func TestResults(t *testing.T) {
	t.Parallel()
	if r := Requeue(0, "x"); !r.Done() || r.RequeueAfter() != 0 {
		t.Errorf("Requeue(0) = %+v, want a Stop", r)
	}
	if r := Stop("x"); !r.Done() || r.Ctrl().RequeueAfter != 0 {
		t.Errorf("Stop = %+v", r)
	}
	if r := Requeue(time.Minute, "x").Sooner(time.Second); r.RequeueAfter() != time.Second {
		t.Errorf("Sooner = %s, want 1s", r.RequeueAfter())
	}
	if r := Requeue(time.Second, "x").Sooner(time.Minute); r.RequeueAfter() != time.Second {
		t.Errorf("Sooner of a later interval = %s, want 1s", r.RequeueAfter())
	}
	if r := Stop("x").Sooner(time.Second); r.RequeueAfter() != time.Second {
		t.Errorf("Sooner on a Stop = %s, want 1s", r.RequeueAfter())
	}
}

func TestFinish(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Resource: "etcdmembers"}
	for _, err := range []error{
		apierrors.NewConflict(gr, "m", errors.New("changed")),
		apierrors.NewAlreadyExists(gr, "m"),
		errors.Join(errors.New("other"), apierrors.NewConflict(gr, "m", errors.New("changed"))),
	} {
		if res, got := Finish(Continue, err); got != nil || res.RequeueAfter != ConflictRetry {
			t.Errorf("Finish(%v) = %+v, %v; want a quiet requeue after %s", err, res, got, ConflictRetry)
		}
	}
	boom := errors.New("boom")
	if _, err := Finish(Continue, boom); !errors.Is(err, boom) {
		t.Errorf("Finish of a transient error = %v, want it returned", err)
	}
	if res, err := Finish(Requeue(3*time.Second, "x"), nil); err != nil || res.RequeueAfter != 3*time.Second {
		t.Errorf("Finish of a requeue = %+v, %v", res, err)
	}
}
