// Package etcdclient_test runs internal/etcdclient against real etcd processes on loopback
// (test/utils/etcdproc): the membership rules, errors and timings only real etcd has.
package etcdclient_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

const (
	// testTimeout bounds each test, cluster start included.
	testTimeout = 2 * time.Minute
	// settleTimeout bounds waiting for etcd to reach a state (a learner in sync, a new
	// leader, the strict reconfiguration check's 5 s of connectivity).
	settleTimeout = 45 * time.Second
	// pollInterval spaces attempts while waiting.
	pollInterval = 200 * time.Millisecond
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run these tests with `make test`, which builds "+
			"etcd from pinned sources and sets it (or set it to a folder holding an etcd binary)")
		os.Exit(1)
	}
	if _, err := etcdproc.FindBinary(); err != nil {
		fmt.Fprintln(os.Stderr, "no etcd binary in KUBEBUILDER_ASSETS:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// startCluster starts a real cluster of size members for one test.
func startCluster(ctx context.Context, t *testing.T, size int) *etcdproc.Cluster {
	t.Helper()
	return etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: size})
}

// dial returns a Conn to c's endpoints, closed when the test ends.
func dial(ctx context.Context, t *testing.T, endpoints []string) *etcdclient.Conn {
	t.Helper()
	cli, err := etcdclient.New(ctx, etcdclient.Config{Endpoints: endpoints})
	if err != nil {
		t.Fatalf("dialing etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := cli.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
	})
	return cli
}

// retry calls f every pollInterval until it succeeds, fails with an error that matches none of
// retryable, or settleTimeout passes. It returns the number of attempts and the last error.
func retry(ctx context.Context, f func(context.Context) error, retryable ...error) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for attempts := 1; ; attempts++ {
		err := f(ctx)
		if err == nil || !slices.ContainsFunc(retryable, func(r error) bool { return errors.Is(err, r) }) {
			return attempts, err
		}
		select {
		case <-ctx.Done():
			return attempts, fmt.Errorf("still failing after %s: %w", settleTimeout, err)
		case <-ticker.C:
		}
	}
}

// initialCluster builds the --initial-cluster of a member joining at runtime from etcd's member
// list, as the operator does (docs/design/membership-flows.md, "Scale up"): each member's first
// peer URL, named by its name or, for the not-yet-started joiner, by the name it will start with.
func initialCluster(list []etcdclient.Member, name, peerURL string) string {
	parts := make([]string, 0, len(list))
	for _, m := range list {
		n := m.Name
		if n == "" && slices.Contains(m.PeerURLs, peerURL) {
			n = name
		}
		parts = append(parts, n+"="+m.PeerURLs[0])
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func memberByName(list []etcdclient.Member, name string) (etcdclient.Member, bool) {
	for _, m := range list {
		if m.Name == name {
			return m, true
		}
	}
	return etcdclient.Member{}, false
}

// leaderOf asks every endpoint for its Status and returns the leader ID they agree on.
func leaderOf(ctx context.Context, cli etcdclient.Client, endpoints []string) (uint64, error) {
	var leader uint64
	for _, ep := range endpoints {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			return 0, err
		}
		if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
			return 0, fmt.Errorf("%w: member %s reports leader %s", etcdclient.ErrNoLeader, st.Endpoint, etcdclient.FormatID(st.Leader))
		}
		leader = st.Leader
	}
	return leader, nil
}
