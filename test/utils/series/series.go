// Package series reads the operator's own Prometheus series (docs/operator.md, "Metrics") from
// controller-runtime's registry, where internal/metrics registers them, for tests that run the
// controllers in-process.
package series

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Sample is one series: a counter's or gauge's value, or a histogram's count and sum.
type Sample struct {
	// Value is the counter's or gauge's value, or the histogram's sample count.
	Value float64
	// Sum is the histogram's sample sum; 0 for other types.
	Sum float64
}

// Get returns the series of metric name whose labels include want, and false when there is
// none. Tests match on their own namespace, so parallel tests never read each other's series.
func Get(tb testing.TB, name string, want map[string]string) (Sample, bool) {
	tb.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		tb.Fatalf("gathering metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if !includes(labels, want) {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return Sample{Value: m.GetCounter().GetValue()}, true
			case m.GetGauge() != nil:
				return Sample{Value: m.GetGauge().GetValue()}, true
			case m.GetHistogram() != nil:
				return Sample{Value: float64(m.GetHistogram().GetSampleCount()), Sum: m.GetHistogram().GetSampleSum()}, true
			}
		}
	}
	return Sample{}, false
}

func includes(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}
