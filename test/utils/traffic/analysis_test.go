package traffic

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/etcd-operator/etcd-operator/test/utils/linearizability"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func put(key, value string, call, ret int) linearizability.Op {
	return linearizability.Op{Kind: linearizability.Put, Key: key, Value: value, Outcome: linearizability.OK, Call: ms(call), Return: ms(ret)}
}

func lost(key, value string, call, ret int) linearizability.Op {
	op := put(key, value, call, ret)
	op.Outcome = linearizability.Unknown
	return op
}

func TestMissingAcknowledged(t *testing.T) {
	t.Parallel()
	found := func(v string) FinalValue { return FinalValue{Value: v, Found: true} }
	tests := []struct {
		name    string
		history linearizability.History
		final   map[string]FinalValue
		want    []string // values of the missing puts
	}{
		{
			name:    "last put is the final value",
			history: linearizability.History{put("x", "a", 0, 1), put("x", "b", 2, 3)},
			final:   map[string]FinalValue{"x": found("b")},
		},
		{
			name:    "concurrent put wins",
			history: linearizability.History{put("x", "a", 0, 10), put("x", "b", 1, 5)},
			final:   map[string]FinalValue{"x": found("a")},
		},
		{
			name:    "concurrent put wins the other way",
			history: linearizability.History{put("x", "a", 0, 10), put("x", "b", 1, 5)},
			final:   map[string]FinalValue{"x": found("b")},
		},
		{
			name:    "unknown put applied late supersedes",
			history: linearizability.History{lost("x", "z", 0, 1), put("x", "a", 2, 3)},
			final:   map[string]FinalValue{"x": found("z")},
		},
		{
			name:    "rolled back to an older acknowledged value",
			history: linearizability.History{put("x", "a", 0, 1), put("x", "b", 2, 3), put("x", "c", 4, 5)},
			final:   map[string]FinalValue{"x": found("a")},
			want:    []string{"b", "c"},
		},
		{
			name:    "key lost",
			history: linearizability.History{put("x", "a", 0, 1), put("y", "b", 0, 1)},
			final:   map[string]FinalValue{"x": {}, "y": found("b")},
			want:    []string{"a"},
		},
		{
			name:    "value nobody wrote",
			history: linearizability.History{put("x", "a", 0, 1)},
			final:   map[string]FinalValue{"x": found("garbage")},
			want:    []string{"a"},
		},
		{
			name:    "unacknowledged puts are never missing",
			history: linearizability.History{put("x", "a", 0, 1), lost("x", "b", 2, 3)},
			final:   map[string]FinalValue{"x": found("a")},
		},
	}
	for _, tc := range tests {
		got, err := MissingAcknowledged(tc.history, tc.final)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var values []string
		for _, m := range got {
			values = append(values, m.Op.Value)
			if m.Reason == "" {
				t.Errorf("%s: missing write %s has no reason", tc.name, m.Op.Value)
			}
		}
		if diff := cmp.Diff(tc.want, values); diff != "" {
			t.Errorf("%s: missing puts (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := MissingAcknowledged(linearizability.History{put("x", "a", 0, 1)}, map[string]FinalValue{}); err == nil {
		t.Error("a written key without a final value: err = nil, want an error")
	}
}

func TestLongestWriteGap(t *testing.T) {
	t.Parallel()
	h := linearizability.History{
		put("x", "a", 0, 10),
		lost("x", "b", 11, 900), // failures do not end a gap
		put("x", "c", 12, 20),
		{Kind: linearizability.Get, Key: "x", Outcome: linearizability.OK, Call: ms(30), Return: ms(500)},
		put("y", "d", 100, 700),
		put("y", "e", 701, 750),
	}
	got := LongestWriteGap(h, ms(1000))
	want := Gap{Length: ms(680), From: ms(20), To: ms(700)}
	if got != want {
		t.Errorf("LongestWriteGap = %+v, want %+v", got, want)
	}
	// With no acknowledged write the whole run is one gap.
	if got := LongestWriteGap(linearizability.History{lost("x", "a", 0, 5)}, ms(300)); got.Length != ms(300) {
		t.Errorf("gap without writes = %s, want 300ms", got.Length)
	}
	// A stall at the end counts too.
	if got := LongestWriteGap(linearizability.History{put("x", "a", 0, 5)}, ms(900)); got != (Gap{Length: ms(895), From: ms(5), To: ms(900)}) {
		t.Errorf("trailing gap = %+v", got)
	}
}
