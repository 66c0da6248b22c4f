// Package panelplot draws dashboard-like panels (time series from Prometheus range queries)
// into one PNG with gonum.org/v1/plot, for tests that show what a user's dashboard shows over a
// scenario: the e2e monitoring test plots the key panels over a member's heal
// (docs/monitoring.md, "What a heal looks like"). It takes values and returns an image; it
// queries nothing.
package panelplot
