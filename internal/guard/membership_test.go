package guard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

func TestMembershipOfReadsEtcdsCommandLine(t *testing.T) {
	t.Parallel()
	args := []string{"--name=c", "--initial-advertise-peer-urls=http://c.x:2380",
		"--initial-cluster=a=http://a.x:2380,b=http://b.x:2380,c=http://c.x:2380", "--initial-cluster-state=existing"}
	m, err := membershipOf(args, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if m.Self != "http://c.x:2380" || strings.Join(m.Peers, ",") != "http://a.x:2380,http://b.x:2380" {
		t.Errorf("self %q, peers %v; want c's URL and a and b", m.Self, m.Peers)
	}
	if tr := m.Client.Transport.(*http.Transport); tr.TLSClientConfig != nil {
		t.Errorf("plaintext peers got a TLS configuration")
	}
	auto, err := membershipOf(append(args, "--peer-auto-tls=true"), time.Second, io.Discard)
	if err != nil || !auto.Client.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify {
		t.Errorf("peer auto-TLS: %v; want an unverified TLS client (self-signed peers)", err)
	}
	if _, err := membershipOf(append(args, "--peer-cert-file=/nonexistent/tls.crt", "--peer-key-file=/nonexistent/tls.key"), time.Second, io.Discard); err == nil {
		t.Error("a missing peer certificate was accepted")
	}
	if _, err := membershipOf([]string{"--name=c"}, time.Second, io.Discard); err == nil {
		t.Error("a command line without --initial-advertise-peer-urls was accepted")
	}
}

// membersServer answers /members with the peer URLs in *list, counting the questions.
func membersServer(t *testing.T, list *atomic.Value, asked *atomic.Int32) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.URL.Path != membersPath {
			http.NotFound(w, r)
			return
		}
		var out []map[string]any
		for _, u := range list.Load().([]string) {
			out = append(out, map[string]any{"id": 1, "peerURLs": []string{u}, "name": "x"})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestAwaitReturnsOnceAPeerListsSelf(t *testing.T) {
	t.Parallel()
	var list atomic.Value
	list.Store([]string{"http://a.x:2380"})
	var asked atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	t.Cleanup(down.Close)
	up := membersServer(t, &list, &asked)
	m := Membership{Self: "http://c.x:2380", Peers: []string{down.URL, up.URL}, Client: http.DefaultClient, Interval: 10 * time.Millisecond, Log: io.Discard}
	done := make(chan error, 1)
	go func() { done <- m.Await(t.Context()) }()
	for asked.Load() < 3 {
		time.Sleep(5 * time.Millisecond) // polling a counter the server bumps; bounded by the test timeout
	}
	select {
	case err := <-done:
		t.Fatalf("Await returned %v before the cluster listed the member", err)
	default:
	}
	list.Store([]string{"http://a.x:2380", "http://c.x:2380"})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Await = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Await did not return once the member was listed")
	}
}

func TestAwaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	var list atomic.Value
	list.Store([]string{"http://a.x:2380"})
	var asked atomic.Int32
	up := membersServer(t, &list, &asked)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	m := Membership{Self: "http://c.x:2380", Peers: []string{up.URL}, Client: http.DefaultClient, Interval: time.Hour, Log: io.Discard}
	if err := m.Await(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Await on a cancelled context = %v", err)
	}
	if err := (Membership{Self: "x", Log: io.Discard}).Await(t.Context()); err == nil {
		t.Error("Await without peers did not fail")
	}
}

// TestStagedJoinWithRealEtcd runs the guard as the real process a staged member's container runs:
// created before its member is added, it holds etcd while etcd's member list does not name it,
// starts it once a learner add does, and the learner joins.
func TestStagedJoinWithRealEtcd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 1})
	m, err := c.PrepareMember("staged")
	if err != nil {
		t.Fatal(err)
	}
	first := c.Members[0]
	initial := first.Name + "=" + first.PeerURL + "," + m.Name + "=" + m.PeerURL
	guard := guardProcess(t, "run", "--"+FlagDataDir+"="+m.DataDir, "--"+FlagMarker+"="+filepath.Join(t.TempDir(), "marker"), "--"+FlagAwaitMembership, "--",
		etcdproc.RequireBinary(t), "--name="+m.Name, "--data-dir="+m.DataDir, "--listen-client-urls="+m.ClientURL, "--advertise-client-urls="+m.ClientURL,
		"--listen-peer-urls="+m.PeerURL, "--initial-advertise-peer-urls="+m.PeerURL, "--initial-cluster="+initial, "--initial-cluster-state=existing")
	var logs strings.Builder
	guard.Stderr = &logs
	if err := guard.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- guard.Wait() }()
	t.Cleanup(func() {
		_ = guard.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Logf("guard after SIGTERM: %v", err)
		}
	})

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{first.ClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	// Held: no etcd answers at the member's client URL while it is not a member.
	if healthy(ctx, m.ClientURL) {
		t.Fatal("etcd answered before the member was added")
	}
	if _, err := cli.MemberAddAsLearner(ctx, []string{m.PeerURL}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !startedLearner(ctx, cli, m.Name) {
		if time.Now().After(deadline) {
			t.Fatalf("the staged learner did not join within a minute; guard and etcd said:\n%s", logs.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("the guard exited (%v) instead of starting etcd:\n%s", err, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !strings.Contains(logs.String(), "lists this member") {
		t.Errorf("the guard did not say why it started etcd:\n%s", logs.String())
	}
}

// healthy reports whether an etcd answers /health at clientURL within a second.
func healthy(ctx context.Context, clientURL string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return true
}

// startedLearner reports whether etcd lists the member named name as started (a started member
// has its name set).
func startedLearner(ctx context.Context, cli *clientv3.Client, name string) bool {
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return false
	}
	for _, mem := range resp.Members {
		if mem.Name == name {
			return true
		}
	}
	return false
}

// TestStopWhileAwaitingMembership: a staged member whose Pod is deleted before it was added ends
// at once, with the exit a signalled etcd would have had.
func TestStopWhileAwaitingMembership(t *testing.T) {
	t.Parallel()
	var list atomic.Value
	list.Store([]string{"http://a.x:2380"})
	var asked atomic.Int32
	up := membersServer(t, &list, &asked)
	dir := t.TempDir()
	cmd := guardProcess(t, "run", "--"+FlagDataDir+"="+dir, "--"+FlagMarker+"="+filepath.Join(dir, "marker"), "--"+FlagAwaitMembership, "--",
		"/nonexistent/etcd", "--name=c", "--initial-advertise-peer-urls=http://c.x:2380", "--initial-cluster=a="+up.URL+",c=http://c.x:2380")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for asked.Load() == 0 {
		time.Sleep(5 * time.Millisecond) // polling a counter the server bumps; bounded by the test timeout
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exit interface{ ExitCode() int }
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("guard stopped while waiting: %v; want exit code %d", err, 128+int(syscall.SIGTERM))
	}
}
