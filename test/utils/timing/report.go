package timing

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// JSONFile is the name of the machine-readable report.
	JSONFile = "timing.json"
	// MarkdownFile is the name of the human-readable report.
	MarkdownFile = "timing.md"
)

// Unit is what an entry's value counts.
type Unit string

// The units of a report. A duration is the zero Unit, so entries written before counts and
// sizes existed read back as durations.
const (
	// UnitDuration entries carry Duration (and Seconds).
	UnitDuration Unit = ""
	// UnitCount entries carry a number of things (API writes, connections, lookups) in Value.
	UnitCount Unit = "count"
	// UnitBytes entries carry a size (a process's RSS) in Value.
	UnitBytes Unit = "bytes"
	// UnitBytesPerSecond entries carry a throughput (a snapshot's) in Value.
	UnitBytesPerSecond Unit = "bytesPerSecond"
)

// Entry is one measure: a duration, a count or a size.
type Entry struct {
	// Test is the name of the test that measured it ("" for suite-level measures).
	Test string
	// Name is what was measured, e.g. "bootstrap-3" or "write-gap-max".
	Name string
	// Unit says which of Duration and Value holds the measure.
	Unit Unit
	// Duration is the measured value of a UnitDuration entry.
	Duration time.Duration
	// Seconds is Duration in seconds, the unit the JSON report uses.
	Seconds float64
	// Value is the measured value of a UnitCount, UnitBytes or UnitBytesPerSecond entry.
	Value int64
	// Note is optional context, e.g. "3 members, 1 killed", or the target of a count.
	Note string
}

// entryJSON is an Entry in timing.json: "seconds", "count", "bytes" or "bytesPerSecond" carries
// the value, so a reader never mistakes a count for a duration.
type entryJSON struct {
	Test           string   `json:"test,omitempty"`
	Name           string   `json:"name"`
	Seconds        *float64 `json:"seconds,omitempty"`
	Count          *int64   `json:"count,omitempty"`
	Bytes          *int64   `json:"bytes,omitempty"`
	BytesPerSecond *int64   `json:"bytesPerSecond,omitempty"`
	Note           string   `json:"note,omitempty"`
}

// MarshalJSON writes the entry with the key of its unit.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{Test: e.Test, Name: e.Name, Note: e.Note}
	switch e.Unit {
	case UnitDuration:
		j.Seconds = &e.Seconds
	case UnitCount:
		j.Count = &e.Value
	case UnitBytes:
		j.Bytes = &e.Value
	case UnitBytesPerSecond:
		j.BytesPerSecond = &e.Value
	default:
		return nil, fmt.Errorf("timing entry %s: unknown unit %q", e.Name, e.Unit)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads an entry written by MarshalJSON.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var j entryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Entry{Test: j.Test, Name: j.Name, Note: j.Note}
	set := 0
	if j.Seconds != nil {
		set++
		e.Seconds, e.Duration = *j.Seconds, time.Duration(*j.Seconds*float64(time.Second))
	}
	if j.Count != nil {
		set++
		e.Unit, e.Value = UnitCount, *j.Count
	}
	if j.Bytes != nil {
		set++
		e.Unit, e.Value = UnitBytes, *j.Bytes
	}
	if j.BytesPerSecond != nil {
		set++
		e.Unit, e.Value = UnitBytesPerSecond, *j.BytesPerSecond
	}
	if set != 1 {
		return fmt.Errorf("timing entry %q: want exactly one of seconds, count, bytes and bytesPerSecond, got %d", j.Name, set)
	}
	return nil
}

// Report is the document written to timing.json.
type Report struct {
	// Started is when the recorder was created.
	Started time.Time `json:"started"`
	// Entries are the measures in the order they were recorded.
	Entries []Entry `json:"entries"`
}

// Recorder collects entries from concurrent tests. The zero value is not usable; call
// NewRecorder.
type Recorder struct {
	started time.Time

	mu      sync.Mutex
	entries []Entry
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{started: time.Now()} }

// Record adds one duration. Names repeat freely: each call is its own entry.
func (r *Recorder) Record(test, name string, d time.Duration, note string) {
	r.add(Entry{Test: test, Name: name, Unit: UnitDuration, Duration: d, Seconds: d.Seconds(), Note: note})
}

// RecordCount adds a number of things, e.g. API writes or new connections in a window. Say
// in note what was counted and its target, if any: the report publishes, never asserts.
func (r *Recorder) RecordCount(test, name string, n int64, note string) {
	r.add(Entry{Test: test, Name: name, Unit: UnitCount, Value: n, Note: note})
}

// RecordBytes adds a size, e.g. a process's resident memory.
func (r *Recorder) RecordBytes(test, name string, b int64, note string) {
	r.add(Entry{Test: test, Name: name, Unit: UnitBytes, Value: b, Note: note})
}

// RecordThroughput adds a rate in bytes per second, e.g. a snapshot's size over its duration.
func (r *Recorder) RecordThroughput(test, name string, bytesPerSecond int64, note string) {
	r.add(Entry{Test: test, Name: name, Unit: UnitBytesPerSecond, Value: bytesPerSecond, Note: note})
}

func (r *Recorder) add(e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
}

// Measure runs fn and records how long it took, whether or not it failed, and returns fn's
// error. A failed run is noted so that it is not mistaken for a fast success.
func (r *Recorder) Measure(test, name string, fn func() error) error {
	start := time.Now()
	err := fn()
	note := ""
	if err != nil {
		note = "failed"
	}
	r.Record(test, name, time.Since(start), note)
	return err
}

// Report returns a snapshot of everything recorded so far.
func (r *Recorder) Report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Report{Started: r.started, Entries: append([]Entry(nil), r.entries...)}
}

// WriteFiles writes JSONFile and MarkdownFile into dir, creating dir if needed. It writes
// both even when nothing was recorded, so a run always leaves a report behind.
func (r *Recorder) WriteFiles(dir string) error {
	rep := r.Report()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating timing report dir: %w", err)
	}
	j, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding timing report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, JSONFile), append(j, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", JSONFile, err)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), []byte(rep.Markdown()), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", MarkdownFile, err)
	}
	return nil
}

// MergeFiles writes the report like WriteFiles, after prepending the entries of a JSONFile
// already in dir. Several test binaries of one run (one per e2e package) each add their
// measures this way; the run starts by removing the old report. The earliest start time wins.
func (r *Recorder) MergeFiles(dir string) error {
	prev, err := ReadFile(filepath.Join(dir, JSONFile))
	if errors.Is(err, os.ErrNotExist) {
		return r.WriteFiles(dir)
	}
	if err != nil {
		return err
	}
	merged := &Recorder{started: r.started}
	if !prev.Started.IsZero() && prev.Started.Before(merged.started) {
		merged.started = prev.Started
	}
	merged.entries = append(prev.Entries, r.Report().Entries...)
	return merged.WriteFiles(dir)
}

// ReadFile reads a report written by WriteFiles.
func ReadFile(path string) (Report, error) {
	var rep Report
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, fmt.Errorf("reading timing report: %w", err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("decoding timing report %s: %w", path, err)
	}
	return rep, nil
}

// Markdown renders the report as a short markdown table, one row per entry in recording order.
func (rep Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# Timing report\n\n")
	fmt.Fprintf(&b, "Run started %s. Measured, not asserted.\n\n", rep.Started.UTC().Format(time.RFC3339))
	if len(rep.Entries) == 0 {
		b.WriteString("Nothing was recorded.\n")
		return b.String()
	}
	b.WriteString("| Measure | Value | Test | Note |\n|---|---:|---|---|\n")
	for _, e := range rep.Entries {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(e.Name), formatValue(e), cell(e.Test), cell(e.Note))
	}
	return b.String()
}

// formatValue prints an entry's value in its unit.
func formatValue(e Entry) string {
	switch e.Unit {
	case UnitCount:
		return strconv.FormatInt(e.Value, 10)
	case UnitBytes:
		return formatBytes(e.Value)
	case UnitBytesPerSecond:
		return formatBytes(e.Value) + "/s"
	default:
		return formatDuration(e.Duration)
	}
}

// formatBytes prints sizes in binary units with one decimal, e.g. 41.3 MiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if v < unit && v > -unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

// formatDuration prints durations at a precision a person can compare at a glance.
func formatDuration(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	default:
		return d.Round(100 * time.Microsecond).String()
	}
}

// cell escapes the characters that would break a markdown table row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
