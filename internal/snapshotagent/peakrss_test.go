package snapshotagent

import (
	"runtime"
	"testing"
)

func TestParsePeakRSS(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]int64{
		"Name:\tetcd-snapshot-agent\nVmPeak:\t 1265432 kB\nVmHWM:\t   41234 kB\nVmRSS:\t   40000 kB\n": 41234 << 10,
		"VmHWM:\t0 kB\n":         0,
		"Name:\tkthreadd\n":      0, // kernel threads report no memory
		"VmHWM:\tlots kB\n":      0,
		"VmHWM:\t-5 kB\n":        0,
		"VmHWM:\t12 kB":          12 << 10, // no final newline
		"VmHWMx:\t12 kB\n":       0,
		"  VmHWM:\t12 kB\n":      0,
		"VmRSS:\t9 kB\nVmHWM:\t": 0,
	} {
		if got := parsePeakRSS([]byte(status)); got != want {
			t.Errorf("parsePeakRSS(%q) = %d, want %d", status, got, want)
		}
	}
}

// TestPeakRSSOfThisProcess reads the test binary's own peak, which is never 0 on Linux.
func TestPeakRSSOfThisProcess(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	if got := peakRSS(); got < 1<<20 {
		t.Errorf("peakRSS() = %d, want at least 1 MiB", got)
	}
}
