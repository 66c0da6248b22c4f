package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// TestForceNewClusterRecoversTheSurvivor is the guard's half of quorum-loss recovery with real
// etcd: a 2-voter cluster loses the member that is not under the guard, the guard's log-tail
// endpoint reports the survivor's log, a request naming another log is ignored, and the request
// naming its own log restarts etcd once with --force-new-cluster: the survivor serves again,
// alone, with every key written before the loss.
func TestForceNewClusterRecoversTheSurvivor(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 1})
	first := c.Members[0]
	m, err := c.PrepareMember("survivor")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	forceFile, forced := filepath.Join(dir, "force"), filepath.Join(dir, "forced")
	listen := freeLoopback(t)
	initial := first.Name + "=" + first.PeerURL + "," + m.Name + "=" + m.PeerURL
	guard := guardProcess(t, "run", "--"+FlagDataDir+"="+m.DataDir, "--"+FlagMarker+"="+filepath.Join(dir, "marker"), "--"+FlagAwaitMembership,
		"--"+FlagRecoveryListen+"="+listen, "--"+FlagForceFile+"="+forceFile, "--"+FlagForcedMarker+"="+forced, "--",
		etcdproc.RequireBinary(t), "--name="+m.Name, "--data-dir="+m.DataDir, "--listen-client-urls="+m.ClientURL, "--advertise-client-urls="+m.ClientURL,
		"--listen-peer-urls="+m.PeerURL, "--initial-advertise-peer-urls="+m.PeerURL, "--initial-cluster="+initial, "--initial-cluster-state=existing")
	logs := startGuard(t, guard)

	cli := client(t, first.ClientURL, m.ClientURL)
	joinAsVoter(ctx, t, cli, m.Name, m.PeerURL, logs)
	for i := range 20 {
		if _, err := cli.Put(ctx, fmt.Sprintf("key-%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}

	tail := getLogTail(ctx, t, listen)
	st, err := cli.Status(ctx, m.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	if tail.MemberID != strconv.FormatUint(st.Header.MemberId, 16) || tail.Index < st.RaftIndex || tail.Index == 0 {
		t.Fatalf("log tail %+v does not describe the survivor (Status: ID %x, commit %d)", tail, st.Header.MemberId, st.RaftIndex)
	}

	// A request naming another log (here: one entry further) does nothing.
	stale := tail
	stale.Index++
	writeFile(t, forceFile, stale.ForceValue())
	waitFor(t, func() bool { return strings.Contains(logs.String(), "ignoring force-new-cluster request") }, "the guard to refuse the stale request", logs)
	if served(ctx, m.ClientURL) {
		t.Fatal("the survivor served a write after a stale request")
	}

	writeFile(t, forceFile, tail.ForceValue())
	waitFor(t, func() bool { return served(ctx, m.ClientURL) }, "the survivor to serve writes after the forced start", logs)
	alone := client(t, m.ClientURL)
	list, err := alone.MemberList(ctx)
	if err != nil || len(list.Members) != 1 || list.Members[0].Name != m.Name {
		t.Fatalf("after the forced start the member list is %v (%v), want only %s", list, err, m.Name)
	}
	got, err := alone.Get(ctx, "key-", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || got.Count != 20 {
		t.Fatalf("keys after recovery: %v (%v), want 20", got, err)
	}
	if b, err := os.ReadFile(forced); err != nil || strings.TrimSpace(string(b)) != tail.ForceValue() {
		t.Errorf("forced marker = %q (%v), want %q", b, err, tail.ForceValue())
	}
}

// startGuard starts the guard and stops it when the test ends; the returned buffer collects
// what the guard and etcd write to stderr.
func startGuard(t *testing.T, guard *exec.Cmd) *syncBuffer {
	t.Helper()
	logs := &syncBuffer{}
	guard.Stdout, guard.Stderr = logs, logs
	if err := guard.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- guard.Wait() }()
	t.Cleanup(func() {
		_ = guard.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Logf("guard after SIGTERM: %v", err)
			}
		case <-time.After(30 * time.Second):
			_ = guard.Process.Kill()
		}
	})
	return logs
}

// syncBuffer is a buffer the guard's output goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func client(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// joinAsVoter adds the guarded member as a learner and promotes it once it is in sync.
func joinAsVoter(ctx context.Context, t *testing.T, cli *clientv3.Client, name, peerURL string, logs *syncBuffer) {
	t.Helper()
	added, err := cli.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := cli.MemberPromote(ctx, added.Member.ID)
		return err == nil
	}, "the learner "+name+" to be promoted", logs)
}

func getLogTail(ctx context.Context, t *testing.T, listen string) LogTailAnswer {
	t.Helper()
	var tail LogTailAnswer
	var last error
	ok := poll(func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+listen+LogTailPath, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("status %s", resp.Status)
			return false
		}
		last = json.NewDecoder(resp.Body).Decode(&tail)
		return last == nil
	})
	if !ok {
		t.Fatalf("log-tail endpoint: %v", last)
	}
	return tail
}

// served reports whether a write through clientURL commits within two seconds.
func served(ctx context.Context, clientURL string) bool {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, DialTimeout: time.Second})
	if err != nil {
		return false
	}
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = cli.Put(ctx, "probe", "x")
	return err == nil
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool, what string, logs *syncBuffer) {
	t.Helper()
	if !poll(cond) {
		t.Fatalf("timed out waiting for %s; guard and etcd said:\n%s", what, logs.String())
	}
}

// poll tries cond every 200 ms for up to a minute.
func poll(cond func() bool) bool {
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}

// TestLogTailOrdersRealLogs reads the WALs of real members: a member stopped before the last
// writes has the shorter log, the reader names the right member and cluster, and garbage after
// the last record (a torn write) does not change the answer.
func TestLogTailOrdersRealLogs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 3})
	behind := c.Members[2]
	if err := behind.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	cli := client(t, c.Members[0].ClientURL, c.Members[1].ClientURL)
	for i := range 10 {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	st, err := cli.Status(ctx, c.Members[1].ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members[:2] {
		if err := m.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ahead, err := ReadLogTail(c.Members[1].DataDir)
	if err != nil {
		t.Fatal(err)
	}
	old, err := ReadLogTail(behind.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if ahead.MemberID != st.Header.MemberId || ahead.ClusterID != st.Header.ClusterId || ahead.Index < st.RaftIndex {
		t.Fatalf("tail %+v, want member %x of cluster %x at index ≥ %d", ahead, st.Header.MemberId, st.Header.ClusterId, st.RaftIndex)
	}
	if old.Index+10 > ahead.Index || old.ClusterID != ahead.ClusterID {
		t.Fatalf("the member stopped before 10 writes ends at %+v, the one that took them at %+v", old, ahead)
	}

	segs, _ := filepath.Glob(filepath.Join(c.Members[1].DataDir, "member", "wal", "*.wal"))
	last := segs[len(segs)-1]
	b, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	end := len(strings.TrimRight(string(b), "\x00"))
	copy(b[end+8:], "torn write, not a record")
	b[end] = 24 // a plausible length, with no valid checksum behind it
	if err := os.WriteFile(last, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err := ReadLogTail(c.Members[1].DataDir); err != nil || again != ahead {
		t.Fatalf("after a torn write: %+v, %v; want %+v", again, err, ahead)
	}
}

// TestForcedArgs: the forced start adds --force-new-cluster and turns the initial corruption
// check off in both spellings, leaving every other flag as it was.
func TestForcedArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--name=a", "--experimental-initial-corrupt-check=true", "--experimental-compact-hash-check-enabled=true"},
			[]string{"--name=a", "--experimental-initial-corrupt-check=false", "--experimental-compact-hash-check-enabled=true", "--force-new-cluster"}},
		{[]string{"--name=a", "--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"},
			[]string{"--name=a", "--feature-gates=InitialCorruptCheck=false,CompactHashCheck=true", "--force-new-cluster"}},
		{[]string{"--name=a"}, []string{"--name=a", "--force-new-cluster"}},
	} {
		if got := forcedArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("forcedArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCovers: a request names the member and cluster, and a position the log has reached.
func TestCovers(t *testing.T) {
	tail := LogTail{MemberID: 0xa, ClusterID: 0xc, Term: 3, Index: 42}
	for req, want := range map[string]bool{
		"c/a/3/42":   true,  // exactly the log
		"c/a/3/41":   true,  // the log moved on in the same term
		"c/a/2/50":   true,  // an earlier term
		"c/a/3/43":   false, // ahead of the log
		"c/a/4/1":    false, // a later term
		"c/b/3/42":   false, // another member
		"d/a/3/42":   false, // another cluster
		"c/a/3":      false,
		"c/a/x/42":   false,
		"c/a/3/42/1": false,
	} {
		if got := tail.Covers(req); got != want {
			t.Errorf("Covers(%q) = %v, want %v", req, got, want)
		}
	}
}
