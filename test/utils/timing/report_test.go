package timing

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWriteFiles(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	r.Record("", "cluster-up", 12340*time.Millisecond, "")
	r.Record("TestBootstrap/3", "bootstrap-3", 8*time.Second+123*time.Millisecond, "3 members")
	r.Record("TestTraffic", "write-gap-max", 1500*time.Microsecond, "a|b\nc")
	dir := filepath.Join(t.TempDir(), "artifacts")
	if err := r.WriteFiles(dir); err != nil {
		t.Fatalf("WriteFiles: %v", err)
	}

	raw, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatalf("reading %s: %v", JSONFile, err)
	}
	var got struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("decoding %s: %v", JSONFile, err)
	}
	want := []map[string]any{
		{"name": "cluster-up", "seconds": 12.34},
		{"test": "TestBootstrap/3", "name": "bootstrap-3", "seconds": 8.123, "note": "3 members"},
		{"test": "TestTraffic", "name": "write-gap-max", "seconds": 0.0015, "note": "a|b\nc"},
	}
	if diff := cmp.Diff(want, got.Entries); diff != "" {
		t.Errorf("%s entries (-want +got):\n%s", JSONFile, diff)
	}

	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatalf("reading %s: %v", MarkdownFile, err)
	}
	wantRows := []string{
		"| Measure | Value | Test | Note |",
		"| cluster-up | 12.3s |  |  |",
		"| bootstrap-3 | 8.12s | TestBootstrap/3 | 3 members |",
		`| write-gap-max | 1.5ms | TestTraffic | a\|b c |`,
	}
	lines := strings.Split(string(md), "\n")
	for _, row := range wantRows {
		if !slices.Contains(lines, row) {
			t.Errorf("%s lacks row %q; got:\n%s", MarkdownFile, row, md)
		}
	}
}

func TestCountsAndBytes(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	r.Record("TestIdle", "settle", 30*time.Second, "")
	r.RecordCount("TestIdle", "idle-api-writes", 0, "API writes besides Lease renewals (target 0)")
	r.RecordCount("TestIdle", "idle-lease-writes", 151, "")
	r.RecordBytes("TestIdle", "operator-rss-max", 43_306_598, "target ≤ 64 MiB")
	r.RecordBytes("TestIdle", "small", 1000, "")
	r.RecordThroughput("TestSnapshot", "snapshot-rate", 196_083_302, "target ≥ 90% of etcdctl's")
	dir := t.TempDir()
	if err := r.WriteFiles(dir); err != nil {
		t.Fatalf("WriteFiles: %v", err)
	}

	raw, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"test": "TestIdle", "name": "settle", "seconds": 30.0},
		// A count of 0 is written: a missing value would read as "not measured".
		{"test": "TestIdle", "name": "idle-api-writes", "count": 0.0, "note": "API writes besides Lease renewals (target 0)"},
		{"test": "TestIdle", "name": "idle-lease-writes", "count": 151.0},
		{"test": "TestIdle", "name": "operator-rss-max", "bytes": 43306598.0, "note": "target ≤ 64 MiB"},
		{"test": "TestIdle", "name": "small", "bytes": 1000.0},
		{"test": "TestSnapshot", "name": "snapshot-rate", "bytesPerSecond": 196083302.0, "note": "target ≥ 90% of etcdctl's"},
	}
	if diff := cmp.Diff(want, got.Entries); diff != "" {
		t.Errorf("%s entries (-want +got):\n%s", JSONFile, diff)
	}

	// Read back (as MergeFiles does), every entry keeps its unit and value.
	rep, err := ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.Report().Entries, rep.Entries); diff != "" {
		t.Errorf("entries read back (-recorded +read):\n%s", diff)
	}

	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(md), "\n")
	for _, row := range []string{
		"| settle | 30s | TestIdle |  |",
		"| idle-api-writes | 0 | TestIdle | API writes besides Lease renewals (target 0) |",
		"| idle-lease-writes | 151 | TestIdle |  |",
		"| operator-rss-max | 41.3 MiB | TestIdle | target ≤ 64 MiB |",
		"| small | 1000 B | TestIdle |  |",
		"| snapshot-rate | 187.0 MiB/s | TestSnapshot | target ≥ 90% of etcdctl's |",
	} {
		if !slices.Contains(lines, row) {
			t.Errorf("%s lacks row %q; got:\n%s", MarkdownFile, row, md)
		}
	}
}

func TestReadFileRejectsAmbiguousEntries(t *testing.T) {
	t.Parallel()
	for name, entry := range map[string]string{
		"no value":         `{"name":"x"}`,
		"two units":        `{"name":"x","seconds":1,"count":2}`,
		"bytes and a rate": `{"name":"x","bytes":1,"bytesPerSecond":2}`,
	} {
		path := filepath.Join(t.TempDir(), JSONFile)
		if err := os.WriteFile(path, []byte(`{"entries":[`+entry+`]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(path); err == nil {
			t.Errorf("%s: ReadFile accepted %s", name, entry)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0:              "0 B",
		1023:           "1023 B",
		1024:           "1.0 KiB",
		64 << 20:       "64.0 MiB",
		(64 << 20) + 1: "64.0 MiB",
		3 << 30:        "3.0 GiB",
		5 << 40:        "5.0 TiB",
		2048 << 40:     "2048.0 TiB",
		-(2 << 20):     "-2.0 MiB",
	} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWriteFilesEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := NewRecorder().WriteFiles(dir); err != nil {
		t.Fatalf("WriteFiles: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatalf("reading %s: %v", MarkdownFile, err)
	}
	if !strings.Contains(string(md), "Nothing was recorded.") {
		t.Errorf("empty report does not say so:\n%s", md)
	}
	raw, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatalf("reading %s: %v", JSONFile, err)
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("decoding %s: %v", JSONFile, err)
	}
	if rep.Started.IsZero() {
		t.Error("report has no start time")
	}
}

func TestMergeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := NewRecorder()
	first.Record("", "cluster-up", 4*time.Second, "make cluster-up")
	if err := first.MergeFiles(dir); err != nil { // no report yet: plain write
		t.Fatalf("MergeFiles: %v", err)
	}
	second := NewRecorder()
	second.Record("TestProbe", "dns-ready", 1500*time.Millisecond, "")
	if err := second.MergeFiles(dir); err != nil {
		t.Fatalf("MergeFiles: %v", err)
	}
	rep, err := ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range rep.Entries {
		names = append(names, e.Name+"="+e.Duration.String())
	}
	if diff := cmp.Diff([]string{"cluster-up=4s", "dns-ready=1.5s"}, names); diff != "" {
		t.Errorf("merged entries (-want +got):\n%s", diff)
	}
	if !rep.Started.Equal(first.Report().Started) {
		t.Errorf("merged start = %s, want the first recorder's %s", rep.Started, first.Report().Started)
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| cluster-up |") || !strings.Contains(string(md), "| dns-ready |") {
		t.Errorf("merged markdown lacks a row:\n%s", md)
	}
	if err := os.WriteFile(filepath.Join(dir, JSONFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := second.MergeFiles(dir); err == nil {
		t.Error("MergeFiles over a corrupt report succeeded; it must not silently drop earlier measures")
	}
}

func TestMeasureAndConcurrentRecord(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { r.Record("T", "n", time.Millisecond, "") })
	}
	wg.Wait()
	errBoom := errors.New("boom")
	if err := r.Measure("T", "failing-step", func() error { return errBoom }); !errors.Is(err, errBoom) {
		t.Errorf("Measure returned %v, want fn's error", err)
	}
	entries := r.Report().Entries
	if len(entries) != 9 {
		t.Fatalf("got %d entries, want 9", len(entries))
	}
	if last := entries[8]; last.Name != "failing-step" || last.Note != "failed" {
		t.Errorf("failed measure recorded as %+v, want name failing-step and note failed", last)
	}
}
