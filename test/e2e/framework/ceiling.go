package framework

import (
	"fmt"
	"time"
)

// CountCeiling is an upper bound on a count measured over a window (API writes, new connections,
// DNS lookups of an idle cluster): set well above what the figure is today, so that only a
// regression crosses it, while the figure itself goes to the timing report. It is stated per
// window of Per and scales with the window actually measured, which can be shortened
// (E2E_IDLE_WINDOW).
type CountCeiling struct {
	// Figure is the name the count is recorded under, e.g. "idle-api-writes".
	Figure string
	// Max is the most allowed per Per.
	Max int64
	// Per is the window Max is stated for.
	Per time.Duration
	// Regression says what probably regressed when the count is above the ceiling.
	Regression string
}

// For returns the ceiling for a window: Max scaled in proportion to window, rounded up, so that a
// shortened window keeps a ceiling of at least 1 and a generous one never becomes strict. A
// window of zero or less has a ceiling of 0.
func (c CountCeiling) For(window time.Duration) int64 {
	if window <= 0 || c.Max <= 0 || c.Per <= 0 {
		return 0
	}
	// Max × window in nanoseconds stays far below the int64 range for any window a test runs.
	return (c.Max*int64(window) + int64(c.Per) - 1) / int64(c.Per)
}

// Check returns nil when n is within the ceiling for window, and otherwise an error that names
// the figure, the count, the ceiling and what probably regressed.
func (c CountCeiling) Check(n int64, window time.Duration) error {
	limit := c.For(window)
	if n <= limit {
		return nil
	}
	return fmt.Errorf("%s = %d in %s, above its ceiling of %d (%d per %s, scaled to the window): %s",
		c.Figure, n, window, limit, c.Max, c.Per, c.Regression)
}
