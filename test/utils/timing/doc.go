// Package timing collects named measures of test scenarios, durations (cluster-up,
// bootstrap-3, write-gap-max, ...), counts (API writes of an idle cluster, new connections) and
// sizes (a process's RSS), and writes them as a report: timing.json for machines and
// timing.md, a short markdown table, for people.
//
// Measures are published, never asserted: CI machines are noisy, so a wall-clock limit in a
// test would flake, and a count or size target (docs/design/timings.md, "Targets") is a goal to report
// against, stated in the entry's note (TESTING.md, "e2e").
package timing
