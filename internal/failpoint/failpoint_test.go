package failpoint

import (
	"testing"
)

// The tests share the package-level arming, so they do not run in parallel.

func TestInjectRunsOnlyTheArmedStep(t *testing.T) {
	var hits []string
	SetAction(LearnerAdded, func(step string) { hits = append(hits, step) })
	t.Cleanup(Disarm)

	for _, n := range Names {
		Inject(n)
	}
	if len(hits) != 1 || hits[0] != LearnerAdded {
		t.Fatalf("hits = %v, want [%s]", hits, LearnerAdded)
	}
	Disarm()
	Inject(LearnerAdded)
	if len(hits) != 1 {
		t.Fatalf("a disarmed failpoint ran: %v", hits)
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
