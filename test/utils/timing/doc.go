// Package timing collects named durations measured by test scenarios (cluster-up, bootstrap-3,
// write-gap-max, ...) and writes them as a report: timing.json for machines and timing.md, a
// short markdown table, for people.
//
// Durations are measured and published, never asserted: CI machines are noisy, so a wall-clock
// limit in a test would flake (style.md §2.3, behaviour.md §24 targets).
package timing
