package linearizability

import (
	"sort"
	"sync"
	"time"
)

// Kind is the kind of a register operation.
type Kind string

const (
	// Put writes a value to a key.
	Put Kind = "put"
	// Get reads a key with a linearizable (quorum) read.
	Get Kind = "get"
)

// Outcome is what the client knows about an operation after it returned.
type Outcome string

const (
	// OK means the client received a successful response.
	OK Outcome = "ok"
	// Unknown means the client received no response or an error, so the operation may or may
	// not have taken effect. Only puts are recorded as Unknown: a failed read changes nothing.
	Unknown Outcome = "unknown"
)

// Op is one recorded operation. Times are offsets from the recorder's start, read from the
// monotonic clock, so they order correctly across goroutines of one process.
type Op struct {
	// ClientID identifies the client (one goroutine issuing one request at a time).
	ClientID int `json:"clientID"`
	// Kind is Put or Get.
	Kind Kind `json:"kind"`
	// Key is the register's key.
	Key string `json:"key"`
	// Value is the value written by a put, or the value read by a successful get.
	Value string `json:"value,omitempty"`
	// Found is false for a successful get that saw no key.
	Found bool `json:"found,omitempty"`
	// Outcome is OK or Unknown.
	Outcome Outcome `json:"outcome"`
	// Call is when the client invoked the operation.
	Call time.Duration `json:"call"`
	// Return is when the client saw the response (or gave up, for Unknown puts).
	Return time.Duration `json:"return"`
}

// History is a list of operations ordered by call time.
type History []Op

// Recorder collects operations from concurrent clients. The zero value is not usable; call
// NewRecorder.
type Recorder struct {
	start time.Time

	mu          sync.Mutex
	ops         []Op
	failedReads int
}

// NewRecorder returns a recorder whose time origin is now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now()}
}

// Start is the recorder's time origin.
func (r *Recorder) Start() time.Time { return r.start }

// Since converts an absolute time taken with time.Now into an offset from the origin. Both
// readings carry Go's monotonic clock, so wall-clock jumps do not reorder operations.
func (r *Recorder) Since(t time.Time) time.Duration { return t.Sub(r.start) }

// RecordPut records a put of value to key that was called at call and returned at ret. A
// non-nil err makes the outcome Unknown: etcd may have committed the write even though the client
// saw an error (a lost response, a timeout after the proposal, a leader change).
func (r *Recorder) RecordPut(clientID int, key, value string, call, ret time.Time, err error) {
	op := Op{
		ClientID: clientID, Kind: Put, Key: key, Value: value, Outcome: OK,
		Call: r.Since(call), Return: r.Since(ret),
	}
	if err != nil {
		op.Outcome = Unknown
	}
	r.append(op)
}

// RecordGet records a linearizable get of key. A failed get is counted but not added to the
// history: it observed nothing and changed nothing, so it cannot constrain a linearization.
func (r *Recorder) RecordGet(clientID int, key, value string, found bool, call, ret time.Time, err error) {
	if err != nil {
		r.mu.Lock()
		r.failedReads++
		r.mu.Unlock()
		return
	}
	if !found {
		value = ""
	}
	r.append(Op{
		ClientID: clientID, Kind: Get, Key: key, Value: value, Found: found, Outcome: OK,
		Call: r.Since(call), Return: r.Since(ret),
	})
}

func (r *Recorder) append(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// FailedReads is the number of gets that returned an error and were left out of the history.
func (r *Recorder) FailedReads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failedReads
}

// History returns a copy of the recorded operations ordered by call time.
func (r *Recorder) History() History {
	r.mu.Lock()
	h := make(History, len(r.ops))
	copy(h, r.ops)
	r.mu.Unlock()
	sort.SliceStable(h, func(i, j int) bool { return h[i].Call < h[j].Call })
	return h
}

// Counts summarises a history.
type Counts struct {
	// AckedPuts is the number of puts with a successful response.
	AckedPuts int `json:"ackedPuts"`
	// UnknownPuts is the number of puts whose outcome is unknown.
	UnknownPuts int `json:"unknownPuts"`
	// Gets is the number of successful gets.
	Gets int `json:"gets"`
}

// Counts returns how many operations of each kind and outcome h holds.
func (h History) Counts() Counts {
	var c Counts
	for _, op := range h {
		switch {
		case op.Kind == Get:
			c.Gets++
		case op.Outcome == OK:
			c.AckedPuts++
		default:
			c.UnknownPuts++
		}
	}
	return c
}
