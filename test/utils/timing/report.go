package timing

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// Entry is one measured duration.
type Entry struct {
	// Test is the name of the test that measured it ("" for suite-level measures).
	Test string `json:"test,omitempty"`
	// Name is what was measured, e.g. "bootstrap-3" or "write-gap-max".
	Name string `json:"name"`
	// Duration is the measured value.
	Duration time.Duration `json:"-"`
	// Seconds is Duration in seconds, the unit the JSON report uses.
	Seconds float64 `json:"seconds"`
	// Note is optional context, e.g. "3 members, 1 killed".
	Note string `json:"note,omitempty"`
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

// Record adds one measure. Names repeat freely: each call is its own entry.
func (r *Recorder) Record(test, name string, d time.Duration, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, Entry{Test: test, Name: name, Duration: d, Seconds: d.Seconds(), Note: note})
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
	for i := range rep.Entries {
		rep.Entries[i].Duration = time.Duration(rep.Entries[i].Seconds * float64(time.Second))
	}
	return rep, nil
}

// Markdown renders the report as a short markdown table, one row per entry in recording order.
func (rep Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# Timing report\n\n")
	fmt.Fprintf(&b, "Run started %s. Measured, not asserted.\n\n", rep.Started.UTC().Format(time.RFC3339))
	if len(rep.Entries) == 0 {
		b.WriteString("No durations were recorded.\n")
		return b.String()
	}
	b.WriteString("| Measure | Duration | Test | Note |\n|---|---:|---|---|\n")
	for _, e := range rep.Entries {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(e.Name), formatDuration(e.Duration), cell(e.Test), cell(e.Note))
	}
	return b.String()
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
