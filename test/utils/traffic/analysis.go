package traffic

import (
	"fmt"
	"sort"
	"time"

	"github.com/etcd-operator/etcd-operator/test/utils/linearizability"
)

// FinalValue is what the final read of one key returned.
type FinalValue struct {
	// Value is the key's value; empty when Found is false.
	Value string `json:"value,omitempty"`
	// Found is false when the key did not exist.
	Found bool `json:"found"`
}

// MissingWrite is an acknowledged put the final state cannot include (see the package doc).
type MissingWrite struct {
	// Op is the acknowledged put.
	Op linearizability.Op `json:"op"`
	// Final is the key's final value.
	Final FinalValue `json:"final"`
	// Reason says why the final value cannot follow the put.
	Reason string `json:"reason"`
}

// MissingAcknowledged returns the acknowledged puts in h that the final values cannot include,
// by the definition in the package doc. Keys with puts but no final value are reported as an
// error: the check would otherwise pass vacuously.
func MissingAcknowledged(h linearizability.History, final map[string]FinalValue) ([]MissingWrite, error) {
	type kv struct{ key, value string }
	writers := map[kv]linearizability.Op{}
	for _, op := range h {
		if op.Kind == linearizability.Put {
			writers[kv{op.Key, op.Value}] = op
		}
	}
	var missing []MissingWrite
	for _, p := range h {
		if p.Kind != linearizability.Put || p.Outcome != linearizability.OK {
			continue
		}
		f, ok := final[p.Key]
		if !ok {
			return nil, fmt.Errorf("key %q was written but has no final value", p.Key)
		}
		if f.Found && f.Value == p.Value {
			continue
		}
		reason := ""
		switch q, wrote := writers[kv{p.Key, f.Value}]; {
		case !f.Found:
			reason = "key does not exist at the end"
		case !wrote:
			reason = fmt.Sprintf("final value %q was never written", f.Value)
		case q.Outcome == linearizability.OK && q.Return < p.Call:
			reason = fmt.Sprintf("final value %q was written by a put that returned at %s, before this put was called", f.Value, q.Return)
		default:
			continue // superseded by a put that could have taken effect later
		}
		missing = append(missing, MissingWrite{Op: p, Final: f, Reason: reason})
	}
	return missing, nil
}

// Gap is an interval without a successful write.
type Gap struct {
	// Length is To - From.
	Length time.Duration `json:"length"`
	// From is when the interval began (offset from the start of traffic).
	From time.Duration `json:"from"`
	// To is when it ended.
	To time.Duration `json:"to"`
}

// LongestWriteGap returns the longest interval between consecutive acknowledged-put returns in
// h, counting the start (offset 0) and end of traffic as boundaries.
func LongestWriteGap(h linearizability.History, end time.Duration) Gap {
	times := []time.Duration{0}
	for _, op := range h {
		if op.Kind == linearizability.Put && op.Outcome == linearizability.OK && op.Return <= end {
			times = append(times, op.Return)
		}
	}
	times = append(times, end)
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var g Gap
	for i := 1; i < len(times); i++ {
		if d := times[i] - times[i-1]; d > g.Length {
			g = Gap{Length: d, From: times[i-1], To: times[i]}
		}
	}
	return g
}
