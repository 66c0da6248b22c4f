package linearizability

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// ms builds a time offset; crafted histories use small integers for readability.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func put(client int, key, value string, call, ret int) Op {
	return Op{ClientID: client, Kind: Put, Key: key, Value: value, Outcome: OK, Call: ms(call), Return: ms(ret)}
}

func lostPut(client int, key, value string, call, ret int) Op {
	op := put(client, key, value, call, ret)
	op.Outcome = Unknown
	return op
}

func get(client int, key, value string, call, ret int) Op {
	return Op{ClientID: client, Kind: Get, Key: key, Value: value, Found: true, Outcome: OK, Call: ms(call), Return: ms(ret)}
}

func getNone(client int, key string, call, ret int) Op {
	return Op{ClientID: client, Kind: Get, Key: key, Outcome: OK, Call: ms(call), Return: ms(ret)}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		history History
		want    porcupine.CheckResult
	}{
		{
			name:    "sequential puts and reads",
			history: History{put(0, "x", "a", 0, 1), get(0, "x", "a", 2, 3), put(0, "x", "b", 4, 5), get(0, "x", "b", 6, 7)},
			want:    porcupine.Ok,
		},
		{
			name:    "read of an empty key before any put",
			history: History{getNone(0, "x", 0, 1), put(0, "x", "a", 2, 3), get(0, "x", "a", 4, 5)},
			want:    porcupine.Ok,
		},
		{
			name: "concurrent reads see an overlapping put before and after it takes effect",
			history: History{
				put(0, "x", "a", 0, 10),
				getNone(1, "x", 1, 3),
				get(2, "x", "a", 1, 2),
				get(1, "x", "a", 4, 5),
			},
			want: porcupine.Ok,
		},
		{
			name: "two concurrent puts linearized in the order the reads imply",
			history: History{
				put(0, "x", "a", 0, 10),
				put(1, "x", "b", 0, 10),
				get(2, "x", "b", 1, 2),
				get(2, "x", "a", 3, 4),
				get(2, "x", "a", 11, 12),
			},
			want: porcupine.Ok,
		},
		{
			name: "unknown put that took effect",
			history: History{
				put(0, "x", "a", 0, 1),
				lostPut(1, "x", "b", 2, 3),
				get(0, "x", "b", 10, 11),
			},
			want: porcupine.Ok,
		},
		{
			name: "unknown put that never took effect",
			history: History{
				put(0, "x", "a", 0, 1),
				lostPut(1, "x", "b", 2, 3),
				get(0, "x", "a", 10, 11),
				get(0, "x", "a", 12, 13),
			},
			want: porcupine.Ok,
		},
		{
			name: "unknown put that took effect long after the client gave up",
			history: History{
				put(0, "x", "a", 0, 1),
				lostPut(1, "x", "b", 2, 3),
				get(0, "x", "a", 4, 5),
				get(0, "x", "b", 6, 7),
			},
			want: porcupine.Ok,
		},
		{
			name: "independent keys",
			history: History{
				put(0, "x", "a", 0, 1),
				put(1, "y", "b", 0, 1),
				get(0, "y", "b", 2, 3),
				get(1, "x", "a", 2, 3),
			},
			want: porcupine.Ok,
		},
		{
			name: "stale read after a completed write",
			history: History{
				put(0, "x", "a", 0, 1),
				put(0, "x", "b", 2, 3),
				get(1, "x", "a", 4, 5),
			},
			want: porcupine.Illegal,
		},
		{
			name: "read of a value overwritten before the read began",
			history: History{
				put(0, "x", "a", 0, 1),
				put(1, "x", "b", 0, 2),
				get(2, "x", "b", 3, 4),
				put(0, "x", "c", 5, 6),
				get(2, "x", "b", 7, 8),
			},
			want: porcupine.Illegal,
		},
		{
			name:    "not found after a completed write",
			history: History{put(0, "x", "a", 0, 1), getNone(1, "x", 2, 3)},
			want:    porcupine.Illegal,
		},
		{
			name:    "read of a value that was never written",
			history: History{put(0, "x", "a", 0, 1), get(1, "x", "z", 2, 3)},
			want:    porcupine.Illegal,
		},
		{
			name:    "read of a value before its put was called",
			history: History{get(1, "x", "a", 0, 1), put(0, "x", "a", 2, 3)},
			want:    porcupine.Illegal,
		},
		{
			name:    "read of an unknown put's value before the put was called",
			history: History{get(1, "x", "a", 0, 1), lostPut(0, "x", "a", 2, 3)},
			want:    porcupine.Illegal,
		},
		{
			name: "reads go back in time after both puts completed",
			history: History{
				put(0, "x", "a", 0, 10),
				put(1, "x", "b", 0, 10),
				get(2, "x", "b", 11, 12),
				get(2, "x", "a", 13, 14),
			},
			want: porcupine.Illegal,
		},
		{
			name: "an unknown put cannot explain an older value reappearing",
			history: History{
				put(0, "x", "a", 0, 1),
				lostPut(1, "x", "b", 2, 3),
				get(0, "x", "b", 4, 5),
				get(0, "x", "a", 6, 7),
			},
			want: porcupine.Illegal,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Check(tc.history, 10*time.Second)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if got.Verdict != tc.want {
				t.Errorf("Check verdict = %s, want %s", got.Verdict, tc.want)
			}
			if got.Linearizable() != (tc.want == porcupine.Ok) {
				t.Errorf("Linearizable() = %t with verdict %s", got.Linearizable(), got.Verdict)
			}
			// The tightening of unknown puts must never change a verdict: compare with the
			// plain porcupine encoding (return time at the end of time).
			plain, err := check(tc.history, 10*time.Second, false)
			if err != nil {
				t.Fatalf("check without tightening: %v", err)
			}
			if plain.Verdict != got.Verdict {
				t.Errorf("verdict without tightening = %s, with = %s", plain.Verdict, got.Verdict)
			}
		})
	}
}

func TestCheckDropsUnobservedUnknownPuts(t *testing.T) {
	t.Parallel()
	h := History{
		put(0, "x", "a", 0, 1),
		lostPut(1, "x", "b", 2, 3),
		lostPut(2, "x", "c", 2, 3),
		get(0, "x", "c", 4, 5),
	}
	got, err := Check(h, time.Second)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got.DroppedUnknown != 1 || got.Operations != 3 {
		t.Errorf("DroppedUnknown = %d, Operations = %d; want 1 and 3", got.DroppedUnknown, got.Operations)
	}
	if !got.Linearizable() {
		t.Errorf("verdict = %s, want Ok", got.Verdict)
	}
}

func TestCheckRejectsInvalidHistories(t *testing.T) {
	t.Parallel()
	_, err := Check(History{put(0, "x", "a", 0, 1), put(1, "x", "a", 2, 3)}, time.Second)
	if !errors.Is(err, ErrDuplicateValue) {
		t.Errorf("duplicate values: err = %v, want ErrDuplicateValue", err)
	}
	if _, err := Check(History{put(0, "x", "", 0, 1)}, time.Second); err == nil {
		t.Error("empty value: err = nil, want an error")
	}
	// The same value on different keys is fine.
	if _, err := Check(History{put(0, "x", "a", 0, 1), put(0, "y", "a", 2, 3)}, time.Second); err != nil {
		t.Errorf("same value on two keys: %v", err)
	}
}

func TestWriteVisualization(t *testing.T) {
	t.Parallel()
	res, err := Check(History{put(0, "x", "a", 0, 1), put(0, "x", "b", 2, 3), get(1, "x", "a", 4, 5)}, time.Second)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if res.Linearizable() {
		t.Fatal("crafted stale read was accepted")
	}
	path, err := res.WriteVisualization(t.TempDir() + "/nested/artifacts")
	if err != nil {
		t.Fatalf("WriteVisualization: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading visualization: %v", err)
	}
	// Descriptions are embedded as JSON, which escapes '>'.
	for _, want := range []string{"<html", `get(x) -\u003e a`, "put(x, b)"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("visualization lacks %q", want)
		}
	}
}

func TestRecorder(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	const clients, perClient = 4, 50
	errLost := errors.New("response lost")
	// Each client owns its key, so whatever the interleaving the history must check.
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			key := string(rune('a' + c))
			last, found := "", false
			for i := range perClient {
				v := key + "-" + string(rune('0'+i%10)) + "-" + time.Now().String()
				call := time.Now()
				var err error
				if i%7 == 3 {
					err = errLost
				}
				r.RecordPut(c, key, v, call, time.Now(), err)
				if err == nil {
					last, found = v, true
				}
				call = time.Now()
				if i%7 == 3 {
					// A failed get is counted, not recorded.
					r.RecordGet(c, key, "", false, call, time.Now(), errLost)
					continue
				}
				r.RecordGet(c, key, last, found, call, time.Now(), nil)
			}
		})
	}
	wg.Wait()

	h := r.History()
	for i := 1; i < len(h); i++ {
		if h[i].Call < h[i-1].Call {
			t.Fatalf("history not ordered by call time at %d", i)
		}
	}
	counts := h.Counts()
	unknownPerClient := (perClient + 3) / 7
	want := Counts{
		AckedPuts:   clients * (perClient - unknownPerClient),
		UnknownPuts: clients * unknownPerClient,
		Gets:        clients * (perClient - unknownPerClient),
	}
	if counts != want {
		t.Errorf("Counts = %+v, want %+v", counts, want)
	}
	if got := r.FailedReads(); got != clients*unknownPerClient {
		t.Errorf("FailedReads = %d, want %d", got, clients*unknownPerClient)
	}
	res, err := Check(h, 10*time.Second)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if !res.Linearizable() {
		t.Errorf("recorded history verdict = %s, want Ok", res.Verdict)
	}
}
