package failpoint

import (
	"context"
	"sync"
	"testing"
)

// The tests that arm the process-wide Set share it, so they do not run in parallel.

func TestInjectRunsOnlyTheArmedStep(t *testing.T) {
	ctx := t.Context()
	var hits []string
	SetAction(LearnerAdded, func(step string) { hits = append(hits, step) })
	t.Cleanup(Disarm)

	for _, n := range Names {
		Inject(ctx, n)
	}
	if len(hits) != 1 || hits[0] != LearnerAdded {
		t.Fatalf("hits = %v, want [%s]", hits, LearnerAdded)
	}
	Disarm()
	Inject(ctx, LearnerAdded)
	if len(hits) != 1 {
		t.Fatalf("a disarmed failpoint ran: %v", hits)
	}
}

// A context's Set replaces the process-wide arming for Inject calls under that context, and
// arms nothing outside it: each of two reconcilers crashed at once sees its own step only.
func TestContextSetIsolatesInjections(t *testing.T) {
	var mu sync.Mutex
	hits := map[string][]string{}
	record := func(who string) Action {
		return func(step string) {
			mu.Lock()
			defer mu.Unlock()
			hits[who] = append(hits[who], step)
		}
	}
	SetAction(MemberRemoved, record("process"))
	t.Cleanup(Disarm)
	var a, b Set
	a.SetAction(LearnerAdded, record("a"))
	b.SetAction(LearnerAdded, record("b"))
	ctxA, ctxB := NewContext(t.Context(), &a), NewContext(context.Background(), &b)

	var wg sync.WaitGroup
	for _, ctx := range []context.Context{ctxA, ctxB} {
		wg.Go(func() {
			for _, n := range Names {
				Inject(ctx, n)
			}
		})
	}
	wg.Wait()
	if len(hits["a"]) != 1 || len(hits["b"]) != 1 || len(hits["process"]) != 0 {
		t.Fatalf("hits = %v, want one learner-added for each Set and none process-wide", hits)
	}

	b.Disarm()
	Inject(ctxB, LearnerAdded)
	Inject(t.Context(), MemberRemoved)
	if len(hits["b"]) != 1 || len(hits["process"]) != 1 {
		t.Fatalf("hits = %v, want the disarmed Set silent and the process-wide step hit outside the Sets", hits)
	}
	var zero Set
	Inject(NewContext(t.Context(), &zero), MemberRemoved)
	if len(hits["process"]) != 1 {
		t.Fatalf("a context with a disarmed Set fell back to the process-wide arming: %v", hits)
	}
}

func TestNamesAreUniqueAndKnown(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range Names {
		if seen[n] {
			t.Errorf("%q listed twice", n)
		}
		seen[n] = true
		if !Known(n) {
			t.Errorf("Known(%q) = false", n)
		}
	}
	if Known("no-such-step") {
		t.Error("Known accepted an unknown step")
	}
}
