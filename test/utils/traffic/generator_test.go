package traffic_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
	"github.com/etcd-operator/etcd-operator/test/utils/hashkv"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// TestTrafficSurvivesLeaderKill runs write traffic against a real 3-member cluster, kills the
// leader with SIGKILL mid-run and restarts it, then requires a linearizable history, no
// acknowledged write missing, and equal HashKV on every member.
func TestTrafficSurvivesLeaderKill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 3})
	admin, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatalf("dialing: %v", err)
	}
	defer func() { _ = admin.Close() }()

	gen := traffic.New(traffic.Config{
		Endpoints:      c.Endpoints(),
		Clients:        3,
		Keys:           4,
		Rate:           150,
		RequestTimeout: 2 * time.Second,
		MaxRequests:    20000,
		MaxDuration:    2 * time.Minute,
	})
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	type outcome struct {
		res *traffic.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := gen.Run(trafficCtx)
		done <- outcome{res, err}
	}()

	waitAcked(ctx, t, gen, 100)
	victim := leader(ctx, t, admin, c)
	t.Logf("killing leader %s", victim.Name)
	if err := victim.Kill(); err != nil {
		t.Fatalf("killing %s: %v", victim.Name, err)
	}
	// Writes must go on without the killed member: two of three are a quorum.
	waitAcked(ctx, t, gen, gen.Stats().AckedPuts+100)
	if err := victim.Start(); err != nil {
		t.Fatalf("restarting %s: %v", victim.Name, err)
	}
	if err := victim.WaitHealthy(ctx); err != nil {
		t.Fatalf("waiting for %s: %v", victim.Name, err)
	}
	waitAcked(ctx, t, gen, gen.Stats().AckedPuts+100)
	stopTraffic()

	out := <-done
	if out.err != nil {
		t.Fatalf("traffic: %v", out.err)
	}
	res := out.res
	t.Log(res)
	lin, err := res.Verify(300, filepath.Join(t.TempDir(), "artifacts"))
	t.Logf("linearizability: %s over %d operations (%d unobserved unknown puts dropped) in %s",
		lin.Verdict, lin.Operations, lin.DroppedUnknown, lin.Elapsed.Round(time.Millisecond))
	if err != nil {
		t.Fatalf("verifying traffic: %v", err)
	}
	if len(res.Missing) != 0 {
		t.Fatalf("%d acknowledged writes missing", len(res.Missing))
	}

	rep, err := hashkv.Compare(ctx, admin, c.Endpoints(), hashkv.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("HashKV: %v", err)
	}
	if !rep.Equal() {
		t.Fatalf("HashKV differs after traffic: %s", rep)
	}
	t.Log(rep)
}

// TestSetEndpointsMovesTraffic starts traffic against one member only, moves it to the other
// two, and kills the first: writes must go on, as they must when Kubernetes replaces a member Pod
// under a new IP.
func TestSetEndpointsMovesTraffic(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 3})
	gen := traffic.New(traffic.Config{Endpoints: []string{c.Members[0].ClientURL}, Clients: 2, Rate: 150, MaxDuration: time.Minute})
	if err := gen.SetEndpoints("http://etcd-1.etcd.ns.svc:2379"); err == nil {
		t.Error("SetEndpoints accepted a DNS name")
	}
	trafficCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	var res *traffic.Result
	go func() {
		var err error
		res, err = gen.Run(trafficCtx)
		done <- err
	}()
	waitAcked(ctx, t, gen, 50)
	if err := gen.SetEndpoints(c.Members[1].ClientURL, c.Members[2].ClientURL); err != nil {
		t.Fatal(err)
	}
	if err := c.Members[0].Kill(); err != nil {
		t.Fatal(err)
	}
	waitAcked(ctx, t, gen, gen.Stats().AckedPuts+100)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("traffic: %v", err)
	}
	if _, err := res.Verify(150, ""); err != nil {
		t.Fatal(err)
	}
	t.Log(res)
}

// TestVerifyCatchesLostWrite shows that Verify fails when the store loses an acknowledged write:
// the test rewrites a key to an older value behind the generator's back after traffic stops,
// which is what a rolled-back member would serve.
func TestVerifyCatchesLostWrite(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 1})
	cli, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatalf("dialing: %v", err)
	}
	defer func() { _ = cli.Close() }()

	// A client factory lets the test intercept the final reads: the (Clients+1)th client is the
	// final reader, and just before it dials, the key is reset to a value no put wrote.
	dials := 0
	gen := traffic.New(traffic.Config{
		Clients:     1,
		Keys:        1,
		ReadRatio:   0.2,
		Rate:        200,
		MaxRequests: 60,
		NewClient: func(ctx context.Context) (*clientv3.Client, error) {
			dials++
			if dials == 2 {
				if _, err := cli.Put(ctx, traffic.DefaultKeyPrefix+"0", "rolled-back"); err != nil {
					return nil, err
				}
			}
			return etcdconn.New(ctx, etcdconn.Options{Endpoints: c.Endpoints()})
		},
	})
	res, err := gen.Run(ctx)
	if err != nil {
		t.Fatalf("traffic: %v", err)
	}
	dir := t.TempDir()
	_, err = res.Verify(1, dir)
	if !errors.Is(err, traffic.ErrMissingWrites) || !errors.Is(err, traffic.ErrNotLinearizable) {
		t.Fatalf("Verify = %v, want ErrMissingWrites and ErrNotLinearizable", err)
	}
	if len(res.Missing) == 0 {
		t.Fatal("no missing write reported")
	}
	for _, f := range []string{traffic.HistoryFile, traffic.SummaryFile, "linearizability.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("artifact %s: %v", f, err)
		}
	}
	if _, err := res.Verify(1_000_000, ""); !errors.Is(err, traffic.ErrTooLittleTraffic) {
		t.Errorf("Verify with an unreachable minimum = %v, want ErrTooLittleTraffic", err)
	}
}

func waitAcked(ctx context.Context, t *testing.T, gen *traffic.Generator, n int64) {
	t.Helper()
	const timeout = time.Minute
	deadline := time.Now().Add(timeout)
	for gen.Stats().AckedPuts < n {
		if time.Now().After(deadline) {
			t.Fatalf("traffic did not reach %d acknowledged puts within %s: %+v", n, timeout, gen.Stats())
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func leader(ctx context.Context, t *testing.T, cli *clientv3.Client, c *etcdproc.Cluster) *etcdproc.Member {
	t.Helper()
	for _, m := range c.Members {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := cli.Status(sctx, m.ClientURL)
		cancel()
		if err != nil {
			t.Fatalf("status of %s: %v", m.Name, err)
		}
		if st.Leader == st.Header.MemberId {
			return m
		}
	}
	t.Fatal("no member is leader")
	return nil
}
