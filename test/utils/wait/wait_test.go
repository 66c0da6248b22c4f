package wait_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

func TestPollReturnsOnceDone(t *testing.T) {
	t.Parallel()
	calls := 0
	err := wait.Poll(t.Context(), time.Millisecond, time.Minute, "the third call", func() (bool, error) {
		calls++
		if calls < 3 {
			return false, errors.New("not yet")
		}
		return true, nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestPollTimeoutNamesWhatAndTheLastError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	err := wait.Poll(t.Context(), time.Millisecond, 20*time.Millisecond, "the impossible", func() (bool, error) {
		return false, boom
	})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, boom) || !strings.Contains(err.Error(), "the impossible") {
		t.Fatalf("Poll = %v, want a deadline error naming what and wrapping the last error", err)
	}
	// done with an error is not done.
	err = wait.Poll(t.Context(), time.Millisecond, 20*time.Millisecond, "x", func() (bool, error) { return true, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Poll = %v, want boom", err)
	}
}

func TestPollEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	err := wait.Poll(ctx, time.Hour, time.Hour, "x", func() (bool, error) { return false, nil })
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Minute {
		t.Fatalf("Poll = %v, want context.Canceled at once", err)
	}
}

// recorder is a testing.TB whose Fatalf records the message and ends the goroutine, as
// testing.T's does.
type recorder struct {
	testing.TB
	ctx    context.Context
	failed chan string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	return &recorder{TB: t, ctx: t.Context(), failed: make(chan string, 1)}
}

func (r *recorder) Helper()                  {}
func (r *recorder) Context() context.Context { return r.ctx }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed <- fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// outcome runs f as a test body and returns the failure message, "" when it passed.
func (r *recorder) outcome(f func()) string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	select {
	case msg := <-r.failed:
		return msg
	default:
		return ""
	}
}

func TestEventuallyTakesEitherForm(t *testing.T) {
	t.Parallel()
	r := newRecorder(t)
	n := 0
	if msg := r.outcome(func() {
		wait.Eventually(r, time.Minute, "two tries", func() error {
			if n++; n < 2 {
				return errors.New("not yet")
			}
			return nil
		})
	}); msg != "" || n != 2 {
		t.Fatalf("Eventually failed (%q) or stopped after %d checks", msg, n)
	}
	var got context.Context
	if msg := r.outcome(func() {
		wait.Eventually(r, time.Minute, "with a context", func(ctx context.Context) error { got = ctx; return nil })
	}); msg != "" || got != r.ctx {
		t.Fatalf("Eventually failed (%q) or passed another context than the test's", msg)
	}
}

func TestEventuallyFailsWithTheLastError(t *testing.T) {
	t.Parallel()
	r := newRecorder(t)
	msg := r.outcome(func() {
		wait.Eventually(r, 50*time.Millisecond, "the impossible", func() error { return errors.New("still no") })
	})
	if !strings.Contains(msg, "the impossible") || !strings.Contains(msg, "still no") {
		t.Fatalf("failure %q, want what and the last error", msg)
	}
}

func TestConsistentlyFailsAtTheFirstBreach(t *testing.T) {
	t.Parallel()
	r := newRecorder(t)
	n := 0
	msg := r.outcome(func() {
		wait.Consistently(r, time.Minute, "steady", func() error {
			if n++; n == 3 {
				return errors.New("moved")
			}
			return nil
		})
	})
	if !strings.Contains(msg, "steady") || !strings.Contains(msg, "moved") || n != 3 {
		t.Fatalf("failure %q after %d checks, want the third check's error", msg, n)
	}
	n = 0
	if msg := r.outcome(func() {
		wait.Consistently(r, 3*wait.Interval, "steady", func(context.Context) error { n++; return nil })
	}); msg != "" || n < 2 {
		t.Fatalf("Consistently failed (%q) or checked %d times over 3 intervals", msg, n)
	}
}
