package linearizability

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// ErrDuplicateValue is returned by Check when two puts to one key write the same value. Unique
// values are what let a read name the write it observed; without them the history cannot be
// tightened (see Check) and missing writes cannot be attributed.
var ErrDuplicateValue = errors.New("two puts to one key write the same value")

// DefaultTimeout bounds one check. Checking is NP-hard in the worst case; histories from the
// traffic generator (a few keys, unique values) check in well under a second.
const DefaultTimeout = time.Minute

// VisualizationFile is the name of the HTML file WriteVisualization creates.
const VisualizationFile = "linearizability.html"

// input and output are the porcupine representations of an operation.
type input struct {
	kind  Kind
	key   string
	value string
}

type output struct {
	value   string
	found   bool
	unknown bool
}

// Model is the sequential specification of one etcd key used as a register: a put sets the
// value; a get returns the current value, or not-found before the first put. Histories are
// partitioned by key, which is exact for single-key operations and keeps the search small.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(input).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	// The state is the key's current value; "" means the key does not exist (puts never
	// write the empty value, see Check).
	Init: func() any { return "" },
	Step: func(state, in, out any) (bool, any) {
		st, i, o := state.(string), in.(input), out.(output)
		if i.kind == Put {
			return true, i.value
		}
		if !o.found {
			return st == "", st
		}
		return o.value == st, st
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(input), out.(output)
		if i.kind == Put {
			if o.unknown {
				return fmt.Sprintf("put(%s, %s) -> unknown", i.key, i.value)
			}
			return fmt.Sprintf("put(%s, %s)", i.key, i.value)
		}
		if !o.found {
			return fmt.Sprintf("get(%s) -> not found", i.key)
		}
		return fmt.Sprintf("get(%s) -> %s", i.key, o.value)
	},
	DescribeState: func(state any) string {
		if state.(string) == "" {
			return "<none>"
		}
		return state.(string)
	},
}

// Result is the verdict of Check.
type Result struct {
	// Verdict is porcupine.Ok, porcupine.Illegal, or porcupine.Unknown when the check timed out.
	Verdict porcupine.CheckResult
	// Operations is the number of operations given to porcupine.
	Operations int
	// DroppedUnknown is the number of unknown-outcome puts that no read observed; they were left
	// out because placing them after every other operation is always possible (see Check).
	DroppedUnknown int
	// Elapsed is how long the check took.
	Elapsed time.Duration

	info porcupine.LinearizationInfo
}

// Linearizable reports whether the history was proven linearizable. A timed-out check is not.
func (r Result) Linearizable() bool { return r.Verdict == porcupine.Ok }

// Check decides whether h is linearizable for the register Model.
//
// Unknown-outcome puts are modelled as porcupine recommends, as operations that may take effect
// at any point after their call: their return time is the end of time. Two transformations
// keep the search small without changing the verdict, given that every put to a key writes a
// distinct non-empty value:
//   - an unknown put whose value no get observed is dropped: linearizing it after every other
//     operation is always allowed and changes no observation;
//   - an unknown put whose value some get observed must take effect before that get's
//     linearization point, so its return time becomes the earliest such get's return time (but
//     not before its own call; a read of a value before its write was called is then still
//     rejected).
func Check(h History, timeout time.Duration) (Result, error) {
	return check(h, timeout, true)
}

// check is Check with the tightening of unknown puts optional, so tests can show that it does
// not change verdicts.
func check(h History, timeout time.Duration, tighten bool) (Result, error) {
	ops, dropped, err := toPorcupine(h, tighten)
	if err != nil {
		return Result{}, err
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	started := time.Now()
	verdict, info := porcupine.CheckOperationsVerbose(Model, ops, timeout)
	return Result{
		Verdict:        verdict,
		Operations:     len(ops),
		DroppedUnknown: dropped,
		Elapsed:        time.Since(started),
		info:           info,
	}, nil
}

// Visualize writes porcupine's interactive HTML view of the checked history to w. For an
// Illegal history it shows the longest partial linearizations, which is where to start reading.
func (r Result) Visualize(w io.Writer) error {
	return porcupine.Visualize(Model, r.info, w)
}

// WriteVisualization writes the HTML view into dir (created if needed) as VisualizationFile
// and returns the file's path.
func (r Result) WriteVisualization(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating artifacts dir: %w", err)
	}
	path := filepath.Join(dir, VisualizationFile)
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("creating visualization file: %w", err)
	}
	if err := r.Visualize(f); err != nil {
		_ = f.Close()
		return "", fmt.Errorf("rendering visualization: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("closing visualization file: %w", err)
	}
	return path, nil
}

// toPorcupine converts h. With tighten it applies the transformations documented on Check;
// without, every unknown put returns at the end of time.
func toPorcupine(h History, tighten bool) ([]porcupine.Operation, int, error) {
	type kv struct{ key, value string }
	// earliestObserver is the earliest return time of a get that saw each (key, value).
	earliestObserver := map[kv]time.Duration{}
	writers := map[kv]bool{}
	for _, op := range h {
		k := kv{op.Key, op.Value}
		switch op.Kind {
		case Put:
			if op.Value == "" {
				return nil, 0, fmt.Errorf("put to %q writes the empty value, which the model reserves for a missing key", op.Key)
			}
			if writers[k] {
				return nil, 0, fmt.Errorf("key %q value %q: %w", op.Key, op.Value, ErrDuplicateValue)
			}
			writers[k] = true
		case Get:
			if !op.Found {
				continue
			}
			if t, ok := earliestObserver[k]; !ok || op.Return < t {
				earliestObserver[k] = op.Return
			}
		default:
			return nil, 0, fmt.Errorf("operation kind %q is not %q or %q", op.Kind, Put, Get)
		}
	}

	ops := make([]porcupine.Operation, 0, len(h))
	dropped := 0
	for _, op := range h {
		ret := int64(op.Return)
		unknown := op.Kind == Put && op.Outcome == Unknown
		if unknown {
			observed, ok := earliestObserver[kv{op.Key, op.Value}]
			switch {
			case !tighten:
				ret = math.MaxInt64
			case !ok:
				dropped++
				continue
			default:
				ret = int64(max(observed, op.Call))
			}
		}
		ops = append(ops, porcupine.Operation{
			ClientId: op.ClientID,
			Input:    input{kind: op.Kind, key: op.Key, value: op.Value},
			Call:     int64(op.Call),
			Output:   output{value: op.Value, found: op.Found, unknown: unknown},
			Return:   ret,
		})
	}
	return ops, dropped, nil
}
