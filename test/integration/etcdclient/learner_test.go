package etcdclient_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// TestCallsNotServedByA35Learner: an etcd 3.5 learner refuses every call but Status and
// serializable reads. The operator's pooled client spreads calls over every member endpoint,
// learners included, so the cluster-wide calls (MemberList, AlarmList, MemberPromote, …) must go
// to another member when a learner refuses. Before the fix an e2e upgrade test saw every
// MemberPromote of a 3.5 learner refused for five minutes; here each call is made many times
// over a voter and a started learner, and none may fail.
func TestCallsNotServedByA35Learner(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	dir, _ := etcdproc.RequireRelease(t, "3.5")
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 1, Binary: filepath.Join(dir, "etcd")})
	joiner, err := c.PrepareMember("learner")
	if err != nil {
		t.Fatal(err)
	}
	setup := dial(ctx, t, c.Endpoints())
	added, list, err := setup.MemberAddAsLearner(ctx, []string{joiner.PeerURL})
	if err != nil {
		t.Fatal(err)
	}
	if err := joiner.StartJoining(initialCluster(list, joiner.Name, joiner.PeerURL)); err != nil {
		t.Fatal(err)
	}
	if _, err := retry(ctx, func(ctx context.Context) error {
		st, err := setup.Status(ctx, joiner.ClientURL)
		if err == nil && !st.IsLearner {
			t.Fatalf("the joiner answered as a voter: %+v", st)
		}
		return err
	}, etcdclient.ErrUnavailable, context.DeadlineExceeded); err != nil {
		t.Fatalf("the learner never answered Status: %v", err)
	}
	// Both endpoints, the learner's first, as the pool orders Pod IPs.
	cli := dial(ctx, t, []string{joiner.ClientURL, c.Members[0].ClientURL})
	for i := range 12 {
		if _, err := cli.MemberList(ctx); err != nil {
			t.Fatalf("MemberList #%d: %v", i, err)
		}
		if _, err := cli.AlarmList(ctx); err != nil {
			t.Fatalf("AlarmList #%d: %v", i, err)
		}
	}
	// Promotion: not in sync yet is etcd's answer to wait; a learner's refusal must never come back.
	deadline := time.Now().Add(settleTimeout)
	for {
		_, err := cli.MemberPromote(ctx, added.ID)
		if err == nil {
			break
		}
		if strings.Contains(err.Error(), "not supported for learner") || time.Now().After(deadline) {
			t.Fatalf("MemberPromote: %v", err)
		}
		time.Sleep(pollInterval)
	}
}
