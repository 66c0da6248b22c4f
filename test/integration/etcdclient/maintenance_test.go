package etcdclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
)

// TestStatusHashKVMoveLeader reads every member's Status, compares HashKV across members at one
// revision after some writes, defragments a member, lists alarms and moves leadership.
func TestStatusHashKVMoveLeader(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, 3)
	cli := dial(ctx, t, c.Endpoints())
	rev := writeKeys(ctx, t, c.Endpoints(), 50)

	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("MemberList: %v", err)
	}
	leader, err := leaderOf(ctx, cli, c.Endpoints())
	if err != nil {
		t.Fatalf("finding the leader: %v", err)
	}
	checkStatuses(ctx, t, cli, c.Endpoints(), list, leader)
	checkHashesEqual(ctx, t, cli, c.Endpoints(), rev)

	if err := cli.Defragment(ctx, c.Endpoints()[1]); err != nil {
		t.Fatalf("Defragment: %v", err)
	}
	if alarms, err := cli.AlarmList(ctx); err != nil || len(alarms) != 0 {
		t.Fatalf("AlarmList: %v, %v", alarms, err)
	}

	var target uint64
	for _, m := range list {
		if m.ID != leader {
			target = m.ID
			break
		}
	}
	if err := cli.MoveLeader(ctx, target); err != nil {
		t.Fatalf("MoveLeader(%s): %v", etcdclient.FormatID(target), err)
	}
	if _, err := retry(ctx, func(ctx context.Context) error {
		got, err := leaderOf(ctx, cli, c.Endpoints())
		if err == nil && got != target {
			return fmt.Errorf("%w: leader is %s", etcdclient.ErrNoLeader, etcdclient.FormatID(got))
		}
		return err
	}, etcdclient.ErrNoLeader); err != nil {
		t.Fatalf("waiting for leader %s: %v", etcdclient.FormatID(target), err)
	}
	// Moving leadership to the leader is a no-op; to an unknown member, a classified refusal.
	if err := cli.MoveLeader(ctx, target); err != nil {
		t.Fatalf("MoveLeader to the leader: %v", err)
	}
	if err := cli.MoveLeader(ctx, 0xdead); !errors.Is(err, etcdclient.ErrBadLeaderTransferee) {
		t.Fatalf("MoveLeader to an unknown member: %v, want ErrBadLeaderTransferee", err)
	}
}

// writeKeys writes n keys through a plain clientv3 client (the adapter has no KV calls on
// purpose) and returns the revision of the last write.
func writeKeys(ctx context.Context, t *testing.T, endpoints []string, n int) int64 {
	t.Helper()
	kv, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: endpoints})
	if err != nil {
		t.Fatalf("dialing for writes: %v", err)
	}
	defer func() { _ = kv.Close() }()
	var rev int64
	for i := range n {
		resp, err := kv.Put(ctx, fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i))
		if err != nil {
			t.Fatalf("put: %v", err)
		}
		rev = resp.Header.Revision
	}
	return rev
}

// checkStatuses asserts every endpoint answers Status as a voter following leader, and every
// listed member answered.
func checkStatuses(ctx context.Context, t *testing.T, cli etcdclient.Client, endpoints []string, list []etcdclient.Member, leader uint64) {
	t.Helper()
	ids := map[uint64]bool{}
	for _, ep := range endpoints {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			t.Fatalf("Status(%s): %v", ep, err)
		}
		if st.Version == "" || st.IsLearner || st.Leader != leader || st.DBSize <= 0 || st.DBSizeInUse <= 0 || st.RaftTerm == 0 || st.RaftIndex == 0 || len(st.Errors) != 0 {
			t.Errorf("Status(%s) = %+v", ep, st)
		}
		ids[st.ID] = true
	}
	for _, m := range list {
		if !ids[m.ID] {
			t.Errorf("member %s answered no Status", m.IDHex())
		}
	}
}

// checkHashesEqual asserts every member hashes its keyspace alike at rev. Members may apply the
// last write a moment apart, so a member failing to answer at rev is retried.
func checkHashesEqual(ctx context.Context, t *testing.T, cli etcdclient.Client, endpoints []string, rev int64) {
	t.Helper()
	var hashes []etcdclient.HashKV
	if _, err := retry(ctx, func(ctx context.Context) error {
		hashes = hashes[:0]
		for _, ep := range endpoints {
			h, err := cli.HashKV(ctx, ep, rev)
			if err != nil {
				return err
			}
			hashes = append(hashes, h)
		}
		return nil
	}, etcdclient.ErrTimeout, etcdclient.ErrUnavailable); err != nil {
		t.Fatalf("HashKV: %v", err)
	}
	for _, h := range hashes[1:] {
		if h.Hash != hashes[0].Hash || h.HashRevision != rev {
			t.Fatalf("HashKV differs at revision %d: %+v", rev, hashes)
		}
	}
}

// TestPoolReusesOneDial shows the pool lets an idle cluster's reconciles share one client: many
// passes of Get plus the calls a pass makes dial once; a rotated TLS digest dials again and
// closes the old client; forgetting the cluster closes the client.
func TestPoolReusesOneDial(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, 1)
	pool := etcdclient.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	cfg := etcdclient.Config{Endpoints: c.Endpoints(), TLSDigest: "material-1"}

	var first etcdclient.Client
	var afterFirstPass int
	for pass := range 20 {
		cli, err := pool.Get(ctx, "ns/etcd", cfg)
		if err != nil {
			t.Fatalf("pass %d: Get: %v", pass, err)
		}
		if first == nil {
			first = cli
		}
		if _, err := cli.MemberList(ctx); err != nil {
			t.Fatalf("pass %d: MemberList: %v", pass, err)
		}
		if _, err := cli.Status(ctx, c.Endpoints()[0]); err != nil {
			t.Fatalf("pass %d: Status: %v", pass, err)
		}
		if _, err := cli.AlarmList(ctx); err != nil {
			t.Fatalf("pass %d: AlarmList: %v", pass, err)
		}
		if pass == 0 {
			afterFirstPass = socketsTo(t, c.Endpoints()[0])
		}
	}
	if got := pool.Dials(); got != 1 {
		t.Fatalf("Dials() = %d after 20 passes, want 1", got)
	}
	// No pass after the first opened a connection: closed ones would linger in TIME_WAIT.
	if got := socketsTo(t, c.Endpoints()[0]); got != afterFirstPass {
		t.Fatalf("%d sockets to the member after 20 passes, %d after the first: connections churn", got, afterFirstPass)
	}

	cfg.TLSDigest = "material-2"
	second, err := pool.Get(ctx, "ns/etcd", cfg)
	if err != nil {
		t.Fatalf("Get after rotation: %v", err)
	}
	if got := pool.Dials(); got != 2 || second == first {
		t.Fatalf("Dials() = %d after the TLS digest changed, want 2 and a new client", got)
	}
	if _, err := first.MemberList(ctx); !errors.Is(err, etcdclient.ErrClosed) {
		t.Fatalf("replaced client: %v, want ErrClosed", err)
	}
	if _, err := second.MemberList(ctx); err != nil {
		t.Fatalf("new client: %v", err)
	}
	if err := pool.Forget("ns/etcd"); err != nil {
		t.Fatalf("Forget: %v", err)
	}
	if _, err := second.Status(ctx, c.Endpoints()[0]); !errors.Is(err, etcdclient.ErrClosed) {
		t.Fatalf("forgotten client: %v, want ErrClosed", err)
	}
}

// socketsTo counts this host's TCP sockets (any state but LISTEN, TIME_WAIT included) whose
// remote end is endpoint's loopback port, from /proc/net/tcp. Only this test talks to its
// member, so a rising count means new connections.
func socketsTo(t *testing.T, endpoint string) int {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatalf("parsing %s: %v", endpoint, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("port of %s: %v", endpoint, err)
	}
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatalf("reading /proc/net/tcp: %v", err)
	}
	// 127.0.0.1 in /proc/net/tcp's little-endian hex.
	remote := fmt.Sprintf("0100007F:%04X", port)
	n := 0
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[2] == remote && f[3] != "0A" { // 0A is LISTEN
			n++
		}
	}
	return n
}

// TestStatusOfStoppedMemberFailsFastAndRecovers: Status of a member that refuses connections
// reports it unavailable instead of waiting for its timeout (a starting or dead member must not
// hold the operator's whole pass), and answers again on the same Conn once the member is back.
func TestStatusOfStoppedMemberFailsFastAndRecovers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, 3)
	cli := dial(ctx, t, c.Endpoints())
	ep := c.Endpoints()[2]
	if _, err := cli.Status(ctx, ep); err != nil {
		t.Fatalf("Status(%s) while it runs: %v", ep, err)
	}
	if err := c.Members[2].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := cli.Status(ctx, ep)
	if err == nil || errors.Is(err, etcdclient.ErrTimeout) || !errors.Is(err, etcdclient.ErrUnavailable) {
		t.Fatalf("Status(%s) of a stopped member = %v, want ErrUnavailable (failing fast), not a timeout", ep, err)
	}
	if err := c.Members[2].Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := retry(ctx, func(ctx context.Context) error {
		_, err := cli.Status(ctx, ep)
		return err
	}, etcdclient.ErrUnavailable, etcdclient.ErrTimeout); err != nil {
		t.Fatalf("Status(%s) after the member restarted: %v", ep, err)
	}
}
