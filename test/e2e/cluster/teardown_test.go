//go:build e2e

package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
)

// TestDownLeavesNothingAndUpWorksAgain takes the cluster down, checks that no process, link,
// iptables rule, route, mount or network namespace of it is left, then brings it back up, so
// the suite ends with the cluster running as it found it. It runs after TestProbe (go test
// takes files in name order: probe_test.go before teardown_test.go), only when disruptive
// checks are enabled (envDisruptive).
func TestDownLeavesNothingAndUpWorksAgain(t *testing.T) {
	requireDisruptive(t)
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), upTimeout)
	defer cancel()
	start := time.Now()
	if err := c.Down(ctx); err != nil {
		t.Fatalf("down: %v", err)
	}
	t.Logf("down took %s", time.Since(start).Round(time.Millisecond))
	left, err := c.Leftovers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("down left %d things behind:\n%s", len(left), strings.Join(left, "\n"))
	}
	start = time.Now()
	if err := c.Up(ctx); err != nil {
		t.Fatalf("up after down: %v", err)
	}
	t.Logf("warm up after down took %s (3 Ready nodes and DNS)", time.Since(start).Round(time.Millisecond))
}
