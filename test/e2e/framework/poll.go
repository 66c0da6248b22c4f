package framework

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultPollInterval is how often waits re-check their condition.
const DefaultPollInterval = 250 * time.Millisecond

// ErrWaitTimeout is returned when a wait's condition did not hold within its timeout.
var ErrWaitTimeout = errors.New("timed out waiting")

// Condition reports whether a wait is over. It returns a short description of the state it saw
// so that a timeout says where things got stuck; a non-nil error aborts the wait.
type Condition func(ctx context.Context) (done bool, state string, err error)

// Poll checks cond every interval until it is done, it returns an error, timeout passes or ctx
// ends. Every wait in the e2e suite has an explicit timeout; there are no bare sleeps. On
// timeout the error wraps ErrWaitTimeout and carries what and the last state seen.
func Poll(ctx context.Context, what string, timeout, interval time.Duration, cond Condition) error {
	if timeout <= 0 {
		return fmt.Errorf("waiting for %s: a positive timeout is required", what)
	}
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	start := time.Now()
	last := "not checked yet"
	for {
		done, state, err := cond(ctx)
		if state != "" {
			last = state
		}
		switch {
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("waiting for %s: %w", what, err)
		case err == nil && done:
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) && time.Since(start) >= timeout {
				return fmt.Errorf("%w for %s after %s; last state: %s", ErrWaitTimeout, what, timeout, last)
			}
			return fmt.Errorf("waiting for %s: %w; last state: %s", what, ctx.Err(), last)
		case <-ticker.C:
		}
	}
}
