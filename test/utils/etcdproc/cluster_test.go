package etcdproc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
	"github.com/etcd-operator/etcd-operator/test/utils/hashkv"
)

// TestKillAndRestartMember runs a real 3-member cluster, kills one member with SIGKILL, shows
// the other two keep quorum, restarts the killed one from its data dir and shows it catches up.
func TestKillAndRestartMember(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 3})

	cli, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatalf("dialing: %v", err)
	}
	defer func() { _ = cli.Close() }()
	mustPut(ctx, t, cli, "k", "before")

	victim := c.Members[2]
	if err := victim.Kill(); err != nil {
		t.Fatalf("killing %s: %v", victim.Name, err)
	}
	if victim.Running() {
		t.Fatalf("%s still running after Kill", victim.Name)
	}
	if err := victim.Kill(); !errors.Is(err, etcdproc.ErrNotRunning) {
		t.Errorf("second Kill: err = %v, want ErrNotRunning", err)
	}
	// Two of three members are a quorum: linearizable writes still succeed.
	mustPut(ctx, t, cli, "k", "during")

	if err := victim.Start(); err != nil {
		t.Fatalf("restarting %s: %v", victim.Name, err)
	}
	if err := victim.Start(); !errors.Is(err, etcdproc.ErrRunning) {
		t.Errorf("second Start: err = %v, want ErrRunning", err)
	}
	if err := victim.WaitHealthy(ctx); err != nil {
		t.Fatalf("waiting for restarted %s: %v", victim.Name, err)
	}

	// A serializable read is answered from the member's own state, so it shows whether the
	// restarted member replayed its WAL and caught up with the write it missed.
	solo, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: []string{victim.ClientURL}})
	if err != nil {
		t.Fatalf("dialing %s: %v", victim.Name, err)
	}
	defer func() { _ = solo.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := solo.Get(ctx, "k", clientv3.WithSerializable())
		if err == nil && len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == "during" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted member did not catch up within 30s: resp=%v err=%v", resp, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}

	if err := victim.Stop(ctx); err != nil {
		t.Errorf("graceful stop: %v", err)
	}
	if err := victim.WipeDataDir(); err != nil {
		t.Errorf("wiping a stopped member: %v", err)
	}
}

// TestTLSCluster serves client traffic over HTTPS with client-certificate authentication: a
// client with the generated certificate works (including Maintenance calls that dial members
// directly), one without is refused.
func TestTLSCluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 1, TLS: true})
	if c.PKI == nil || !strings.HasPrefix(c.Members[0].ClientURL, "https://") {
		t.Fatalf("TLS cluster has PKI %v and client URL %s", c.PKI, c.Members[0].ClientURL)
	}
	good, err := c.PKI.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: c.Endpoints(), TLS: good})
	if err != nil {
		t.Fatalf("dialing with the client certificate: %v", err)
	}
	defer func() { _ = cli.Close() }()
	mustPut(ctx, t, cli, "k", "v")
	rep, err := hashkv.Compare(ctx, cli, c.Endpoints(), hashkv.Options{Timeout: 30 * time.Second})
	if err != nil || !rep.Equal() {
		t.Fatalf("HashKV over TLS: %v, %v", rep, err)
	}

	noCert := good.Clone()
	noCert.Certificates = nil
	anon, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: c.Endpoints(), TLS: noCert, DialTimeout: 2 * time.Second})
	if err == nil {
		defer func() { _ = anon.Close() }()
		pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = anon.Put(pctx, "k", "anonymous")
		pcancel()
	}
	if err == nil {
		t.Fatal("a client without a certificate could write to a cluster that requires one")
	}
	t.Logf("client without a certificate refused: %v", err)
}

func TestFindBinaryHonoursEnv(t *testing.T) {
	// Not parallel: it changes the environment.
	t.Setenv("ETCD_BIN", "")
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	if _, err := etcdproc.FindBinary(); !errors.Is(err, etcdproc.ErrNoBinary) {
		t.Errorf("FindBinary with an empty assets dir: err = %v, want ErrNoBinary", err)
	}
}

// mustPut writes k=v, retrying for up to 30s: right after a member (possibly the leader) is
// killed, etcd answers "request timed out" or "leader changed" until a new leader is elected.
func mustPut(ctx context.Context, t *testing.T, cli *clientv3.Client, k, v string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := cli.Put(pctx, k, v)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("put %s=%s: %v", k, v, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
