package promserver

import (
	"errors"
	"os"
	"testing"
)

// RequireBinary returns the server binary, or skips the test with the reason when
// PROMETHEUS_BIN_DIR is unset. In CI (CI=true) that is a failure too, so a green CI run never
// means the Prometheus tests were skipped. Every other problem is a failure.
func RequireBinary(tb testing.TB) string {
	tb.Helper()
	b, err := FindBinary()
	if errors.Is(err, ErrNoBinary) && os.Getenv("CI") != "true" {
		tb.Skipf("skipping test that needs a real Prometheus: %v", err)
	}
	if err != nil {
		tb.Fatalf("finding the Prometheus server: %v", err)
	}
	return b
}

// StartForTest starts a server for one test: it skips when there is no binary (RequireBinary),
// uses tb.TempDir() when opts.Dir is empty, kills the server when the test ends and, if the
// test failed, logs the tail of the server's log.
func StartForTest(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.Binary == "" {
		opts.Binary = RequireBinary(tb)
	}
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	s, err := Start(tb.Context(), opts)
	if err != nil {
		tb.Fatalf("starting Prometheus: %v", err)
	}
	// Registered after TempDir, so it runs before the folder is removed.
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("prometheus log tail (%s):\n%s", s.LogPath, s.LogTail(40))
		}
		if err := s.Close(); err != nil {
			tb.Errorf("stopping Prometheus: %v", err)
		}
	})
	return s
}
