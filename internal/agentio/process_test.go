package agentio

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// TestWithin: an interruption or the deadline is the reason reported, not the error of the call
// it interrupted; the work's result is kept either way.
func TestWithin(t *testing.T) {
	t.Parallel()
	task := Task{Name: "the work", Done: "the work was done"}
	errCall := errors.New("the call failed")
	blocked := func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 7, errors.Join(errCall, ctx.Err())
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		timeout time.Duration
		work    func(context.Context) (int, error)
		want    snapshot.Reason
	}{
		{"done", t.Context(), time.Minute, func(context.Context) (int, error) { return 7, nil }, ""},
		{"own failure", t.Context(), time.Minute, func(context.Context) (int, error) {
			return 7, snapshot.Fail(snapshot.ReasonStoreFailed, errCall)
		}, snapshot.ReasonStoreFailed},
		{"asked to stop", cancelled, time.Minute, blocked, snapshot.ReasonInterrupted},
		{"deadline", t.Context(), time.Millisecond, blocked, snapshot.ReasonDeadlineExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := Within(c.ctx, c.timeout, task, c.work)
			if res != 7 || snapshot.ReasonOf(err) != c.want || (c.want == "") != (err == nil) {
				t.Errorf("Within = %d, %v (%q); want 7 and %q", res, err, snapshot.ReasonOf(err), c.want)
			}
		})
	}
}

func TestNoArguments(t *testing.T) {
	t.Parallel()
	if err := NoArguments("agent", nil); err != nil {
		t.Errorf("no arguments: %v", err)
	}
	if err := NoArguments("agent", []string{"--now"}); snapshot.ReasonOf(err) != snapshot.ReasonInvalidConfig {
		t.Errorf("an argument: %v, want InvalidConfig", err)
	}
}
