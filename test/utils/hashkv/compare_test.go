package hashkv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
	"github.com/etcd-operator/etcd-operator/test/utils/hashkv"
)

func TestReportMismatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		members []hashkv.MemberHash
		want    []string
	}{
		{
			name:    "all equal",
			members: []hashkv.MemberHash{{Endpoint: "a", Hash: 7, CompactRevision: 3}, {Endpoint: "b", Hash: 7, CompactRevision: 3}},
		},
		{
			name:    "one hash differs",
			members: []hashkv.MemberHash{{Endpoint: "a", Hash: 7}, {Endpoint: "b", Hash: 7}, {Endpoint: "c", Hash: 9}},
			want:    []string{"c: hash 9 (compact revision 0) differs from a: hash 7 (compact revision 0) at revision 10"},
		},
		{
			name:    "compaction revision differs",
			members: []hashkv.MemberHash{{Endpoint: "a", Hash: 7, CompactRevision: 1}, {Endpoint: "b", Hash: 7, CompactRevision: 2}},
			want:    []string{"b: hash 7 (compact revision 2) differs from a: hash 7 (compact revision 1) at revision 10"},
		},
		{
			name:    "a member did not answer",
			members: []hashkv.MemberHash{{Endpoint: "a", Err: "unavailable"}, {Endpoint: "b", Hash: 7}},
			want:    []string{"a: no hash: unavailable"},
		},
	}
	for _, tc := range tests {
		rep := hashkv.Report{Revision: 10, Members: tc.members}
		got := rep.Mismatches()
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: Mismatches() = %q, want %q", tc.name, got, tc.want)
		}
		if rep.Equal() != (len(tc.want) == 0) {
			t.Errorf("%s: Equal() = %t with mismatches %q", tc.name, rep.Equal(), got)
		}
	}
	if (hashkv.Report{}).Equal() {
		t.Error("an empty report is Equal")
	}
}

// TestCompareRealCluster writes through a real 3-member cluster while one member is down, then
// compares right after the member restarts: the comparison must wait for it to catch up and
// then find every hash equal.
func TestCompareRealCluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 3})
	cli, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatalf("dialing: %v", err)
	}
	defer func() { _ = cli.Close() }()

	lagging := c.Members[1]
	if err := lagging.Kill(); err != nil {
		t.Fatalf("killing %s: %v", lagging.Name, err)
	}
	for i := range 50 {
		putOrFatal(ctx, t, cli, fmt.Sprintf("k%d", i%5), fmt.Sprintf("v%d", i))
	}
	if err := lagging.Start(); err != nil {
		t.Fatalf("restarting %s: %v", lagging.Name, err)
	}
	rep, err := hashkv.Compare(ctx, cli, c.Endpoints(), hashkv.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	if !rep.Equal() {
		t.Fatalf("hashes differ on a healthy cluster: %s", rep)
	}
	if rep.Revision < 51 {
		t.Errorf("compared at revision %d, want at least 51 (50 puts)", rep.Revision)
	}
	t.Logf("%s after %d attempts", rep, rep.Attempts)
}

// TestCompareDetectsDivergence compares two independent single-member clusters holding
// different data at the same revision, which is what a diverged member looks like.
func TestCompareDetectsDivergence(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	a := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 1})
	b := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 1})
	for cluster, value := range map[*etcdproc.Cluster]string{a: "left", b: "right"} {
		cli, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: cluster.Endpoints()})
		if err != nil {
			t.Fatalf("dialing: %v", err)
		}
		putOrFatal(ctx, t, cli, "k", value)
		_ = cli.Close()
	}
	cli, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: a.Endpoints()})
	if err != nil {
		t.Fatalf("dialing: %v", err)
	}
	defer func() { _ = cli.Close() }()
	endpoints := append(a.Endpoints(), b.Endpoints()...)
	rep, err := hashkv.Compare(ctx, cli, endpoints, hashkv.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	if rep.Equal() {
		t.Fatalf("diverged stores compared equal: %+v", rep)
	}
	if got := rep.Mismatches(); len(got) != 1 || !strings.HasPrefix(got[0], b.Endpoints()[0]) {
		t.Errorf("Mismatches() = %q, want one entry for %s", got, b.Endpoints()[0])
	}
}

// putOrFatal writes k=v, retrying for up to 30s: right after a member (possibly the leader) is
// killed, etcd answers "request timed out" or "leader changed" until a new leader is elected.
func putOrFatal(ctx context.Context, t *testing.T, cli *clientv3.Client, k, v string) {
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
