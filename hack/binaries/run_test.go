package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunConcurrentlyKeepsOrderAndLimit: folders come back in the order of the steps whatever
// order they finish in, no more than the limit run at once, and a failure is reported only
// after every other step ran (what they built stays cached).
func TestRunConcurrentlyKeepsOrderAndLimit(t *testing.T) {
	t.Parallel()
	var running, peak, ran atomic.Int32
	step := func(i int, fail bool) func(context.Context) (string, error) {
		return func(context.Context) (string, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Duration(10-i) * 5 * time.Millisecond) // later steps finish first
			running.Add(-1)
			ran.Add(1)
			if fail {
				return "", fmt.Errorf("step %d failed", i)
			}
			return fmt.Sprintf("dir-%d", i), nil
		}
	}
	var steps []func(context.Context) (string, error)
	for i := range 8 {
		steps = append(steps, step(i, false))
	}
	dirs, err := runConcurrently(t.Context(), steps, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dirs {
		if d != fmt.Sprintf("dir-%d", i) {
			t.Fatalf("folders %v: not in the order of the steps", dirs)
		}
	}
	if p := peak.Load(); p < 2 || p > 3 {
		t.Errorf("at most %d steps ran at once, want 2..3 (concurrent, limited to 3)", p)
	}
	ran.Store(0)
	failing := []func(context.Context) (string, error){step(0, false), step(1, true), step(2, false), step(3, true)}
	if _, err := runConcurrently(t.Context(), failing, 2); err == nil || err.Error() != "step 1 failed" {
		t.Errorf("error %v, want the first failing step's", err)
	} else if ran.Load() != 4 {
		t.Errorf("%d of 4 steps ran, want all", ran.Load())
	}
}
