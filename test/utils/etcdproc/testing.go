package etcdproc

import (
	"context"
	"errors"
	"testing"
)

// RequireBinary returns the etcd binary, or skips the test with the reason when there is none.
// Only a missing binary skips: every other problem is a failure.
func RequireBinary(tb testing.TB) string {
	tb.Helper()
	b, err := FindBinary()
	if errors.Is(err, ErrNoBinary) {
		tb.Skipf("skipping test that needs real etcd processes: %v", err)
	}
	if err != nil {
		tb.Fatalf("finding etcd: %v", err)
	}
	return b
}

// StartForTest starts a cluster for one test: it skips when there is no etcd binary, uses a
// folder under tb.TempDir() when opts.Dir is empty, kills the members when the test ends and,
// if the test failed, logs the tail of every member's log.
func StartForTest(ctx context.Context, tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	if opts.Binary == "" {
		opts.Binary = RequireBinary(tb)
	}
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	c, err := StartCluster(ctx, opts)
	if err != nil {
		tb.Fatalf("starting etcd cluster: %v", err)
	}
	// Registered after TempDir, so it runs before the folder is removed.
	tb.Cleanup(func() {
		if tb.Failed() {
			for _, m := range c.Members {
				tb.Logf("etcd member %s log tail:\n%s", m.Name, m.LogTail(30))
			}
		}
		if err := c.Close(); err != nil {
			tb.Errorf("stopping etcd cluster: %v", err)
		}
	})
	return c
}
