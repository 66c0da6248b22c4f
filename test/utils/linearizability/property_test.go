package linearizability

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// simulate builds a history of a correct register: every operation takes effect at one
// instant inside its call/return interval (or, for an unknown put that is applied late, at any
// instant after its call), and reads return the value current at their instant. Some puts lose
// their response; half of those are never applied. Such histories are linearizable by
// construction, so the checker must accept every one.
func simulate(rng *rand.Rand, clients, opsPerClient, keys int) History {
	type event struct {
		at time.Duration
		op int
	}
	var h History
	var events []event
	applied := map[int]bool{}
	for c := range clients {
		now := time.Duration(rng.IntN(5)) * time.Millisecond
		for i := range opsPerClient {
			call := now + time.Duration(rng.IntN(3))*time.Millisecond
			effect := call + time.Duration(rng.IntN(10))*time.Millisecond
			ret := effect + time.Duration(rng.IntN(10))*time.Millisecond
			op := Op{ClientID: c, Key: fmt.Sprintf("k%d", rng.IntN(keys)), Outcome: OK, Call: call, Return: ret}
			if rng.IntN(2) == 0 {
				op.Kind = Put
				op.Value = fmt.Sprintf("c%d-%d", c, i)
				if rng.IntN(6) == 0 {
					op.Outcome = Unknown
					if rng.IntN(3) == 0 {
						effect = ret + time.Duration(rng.IntN(50))*time.Millisecond // applied late
					}
				}
			} else {
				op.Kind = Get
			}
			idx := len(h)
			h = append(h, op)
			applied[idx] = op.Outcome == OK || rng.IntN(2) == 0
			events = append(events, event{at: effect, op: idx})
			now = ret
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].at < events[j].at })
	state := map[string]string{}
	for _, e := range events {
		op := &h[e.op]
		switch {
		case op.Kind == Put && applied[e.op]:
			state[op.Key] = op.Value
		case op.Kind == Get:
			op.Value, op.Found = state[op.Key], state[op.Key] != ""
		}
	}
	sort.SliceStable(h, func(i, j int) bool { return h[i].Call < h[j].Call })
	return h
}

// TestCheckAcceptsSimulatedCorrectRegisters checks many random correct histories, with
// overlapping operations and unknown outcomes (applied, applied late, or never), and requires
// the checker to accept each, with and without the tightening of unknown puts.
func TestCheckAcceptsSimulatedCorrectRegisters(t *testing.T) {
	t.Parallel()
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 42)) //nolint:gosec // G404: seeded on purpose, so a failing seed reproduces.
		h := simulate(rng, 1+rng.IntN(4), 5+rng.IntN(20), 1+rng.IntN(3))
		for _, tighten := range []bool{true, false} {
			res, err := check(h, 10*time.Second, tighten)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if res.Verdict != porcupine.Ok {
				t.Fatalf("seed %d (tighten %t): a correct register's history was judged %s:\n%+v", seed, tighten, res.Verdict, h)
			}
		}
	}
}

// TestCheckRejectsSimulatedStaleReads plants a stale read in random correct histories: a get
// that saw the value of put Q now reports the value of put P, although P returned before Q was
// called and Q returned before the get was called. No linearization allows that.
func TestCheckRejectsSimulatedStaleReads(t *testing.T) {
	t.Parallel()
	planted := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7)) //nolint:gosec // G404: seeded on purpose, so a failing seed reproduces.
		h := simulate(rng, 1+rng.IntN(3), 10+rng.IntN(20), 1)
		if !plantStaleRead(h) {
			continue
		}
		planted++
		res, err := Check(h, 10*time.Second)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res.Verdict != porcupine.Illegal {
			t.Fatalf("seed %d: a planted stale read was judged %s:\n%+v", seed, res.Verdict, h)
		}
	}
	if planted < 50 {
		t.Fatalf("only %d of 300 histories could take a stale read; the test proves too little", planted)
	}
}

func plantStaleRead(h History) bool {
	for g := range h {
		if h[g].Kind != Get || !h[g].Found {
			continue
		}
		for q := range h {
			if h[q].Kind != Put || h[q].Outcome != OK || h[q].Key != h[g].Key || h[q].Value != h[g].Value || h[q].Return >= h[g].Call {
				continue
			}
			for p := range h {
				if h[p].Kind == Put && h[p].Outcome == OK && h[p].Key == h[g].Key && h[p].Return < h[q].Call {
					h[g].Value = h[p].Value
					return true
				}
			}
		}
	}
	return false
}
