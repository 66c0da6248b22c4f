// Package wait holds the polling waits every test tier shares: Poll for code that reports an
// error (the local cluster's tooling, e2e), Eventually and Consistently for tests. Waits poll
// with explicit deadlines; nothing sleeps a fixed time for something to happen (TESTING.md,
// "Rules for tests").
package wait

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Interval is how often Eventually and Consistently check again: envtest answers in
// milliseconds, and a controller acts on watch events, so a check is cheap and usually passes
// within a few intervals.
const Interval = 100 * time.Millisecond

// Poll calls check every interval until it reports done without an error, timeout passes or ctx
// ends. The error names what was awaited and carries check's last error, so that the message says
// where to look.
func Poll(ctx context.Context, interval, timeout time.Duration, what string, check func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		done, err := check()
		if done && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting %s for %s: %w (last error: %w)", timeout, what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting %s for %s: %w", timeout, what, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// Check is a condition a test waits for: nil when it holds, else why not. It may take the
// test's context.
type Check interface {
	func() error | func(context.Context) error
}

func run[C Check](ctx context.Context, check C) error {
	switch f := any(check).(type) {
	case func() error:
		return f()
	case func(context.Context) error:
		return f(ctx)
	}
	panic("unreachable: Check has two forms")
}

// Eventually checks every Interval until check holds, and fails the test with check's last
// error once timeout passed (or the test's context ended).
func Eventually[C Check](tb testing.TB, timeout time.Duration, what string, check C) {
	tb.Helper()
	ctx := tb.Context()
	deadline := time.Now().Add(timeout)
	for {
		err := run(ctx, check)
		if err == nil {
			return
		}
		if !time.Now().Before(deadline) {
			tb.Fatalf("%s: not true after %s: %v", what, timeout, err)
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("%s: %v (last: %v)", what, ctx.Err(), err)
		case <-time.After(Interval):
		}
	}
}

// Consistently checks every Interval for window and fails the test at the first check that
// does not hold.
func Consistently[C Check](tb testing.TB, window time.Duration, what string, check C) {
	tb.Helper()
	ctx := tb.Context()
	deadline := time.Now().Add(window)
	for {
		if err := run(ctx, check); err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
		if !time.Now().Before(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(Interval):
		}
	}
}
