package etcdfake_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
)

func memberID(t *testing.T, c *etcdfake.Cluster, name string) uint64 {
	t.Helper()
	for _, m := range c.Members() {
		if m.Name == name {
			return m.ID
		}
	}
	t.Fatalf("no member %q", name)
	return 0
}

func TestClusterLearnerLifecycle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(3)

	added, list, err := c.MemberAddAsLearner(ctx, []string{"http://m3:2380"})
	if err != nil {
		t.Fatalf("MemberAddAsLearner: %v", err)
	}
	if !added.IsLearner || added.Started() || len(list) != 4 {
		t.Fatalf("added %+v, list of %d", added, len(list))
	}
	// Idempotence signal: the same peer URL again.
	if _, _, err := c.MemberAddAsLearner(ctx, []string{"http://m3:2380"}); !errors.Is(err, etcdclient.ErrPeerURLExists) {
		t.Fatalf("re-add: %v, want ErrPeerURLExists", err)
	}
	if _, _, err := c.MemberAddAsLearner(ctx, []string{"http://m4:2380"}); !errors.Is(err, etcdclient.ErrTooManyLearners) {
		t.Fatalf("second learner: %v, want ErrTooManyLearners", err)
	}
	// Not started, then started but behind: not ready either way.
	if _, err := c.MemberPromote(ctx, added.ID); !errors.Is(err, etcdclient.ErrLearnerNotReady) {
		t.Fatalf("promote unstarted: %v, want ErrLearnerNotReady", err)
	}
	if err := c.Start(added.ID, "m3", "http://m3:2379"); err != nil {
		t.Fatalf("StartLearner: %v", err)
	}
	if _, err := c.MemberPromote(ctx, added.ID); !errors.Is(err, etcdclient.ErrLearnerNotReady) {
		t.Fatalf("promote unsynced: %v, want ErrLearnerNotReady", err)
	}
	st, err := c.Status(ctx, "http://m3:2379")
	if err != nil || !st.IsLearner || st.Leader != memberID(t, c, "m0") {
		t.Fatalf("learner Status: %+v, %v", st, err)
	}
	if err := c.MarkSynced(added.ID); err != nil {
		t.Fatalf("MarkSynced: %v", err)
	}
	list, err = c.MemberPromote(ctx, added.ID)
	if err != nil {
		t.Fatalf("MemberPromote: %v", err)
	}
	for _, m := range list {
		if m.IsLearner {
			t.Fatalf("learner left after promotion: %+v", m)
		}
	}
	if _, err := c.MemberPromote(ctx, added.ID); !errors.Is(err, etcdclient.ErrMemberNotLearner) {
		t.Fatalf("promote a voter: %v, want ErrMemberNotLearner", err)
	}
	want := []etcdfake.Call{
		{Method: etcdfake.MemberAddAsLearner, Arg: "http://m3:2380"},
		{Method: etcdfake.MemberAddAsLearner, Arg: "http://m3:2380"},
		{Method: etcdfake.MemberAddAsLearner, Arg: "http://m4:2380"},
		{Method: etcdfake.MemberPromote, Arg: added.IDHex()},
		{Method: etcdfake.MemberPromote, Arg: added.IDHex()},
		{Method: etcdfake.Status, Arg: "http://m3:2379"},
		{Method: etcdfake.MemberPromote, Arg: added.IDHex()},
		{Method: etcdfake.MemberPromote, Arg: added.IDHex()},
	}
	if diff := cmp.Diff(want, c.Calls()); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
}

func TestClusterStrictReconfigChecks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(3)
	m1, m2 := memberID(t, c, "m1"), memberID(t, c, "m2")
	if err := c.Stop(m2); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// The leader is not connected to every voter: no add.
	if _, _, err := c.MemberAddAsLearner(ctx, []string{"http://m3:2380"}); !errors.Is(err, etcdclient.ErrUnhealthyCluster) {
		t.Fatalf("add with a voter down: %v, want ErrUnhealthyCluster", err)
	}
	// Removing a running voter would leave 1 running of 2.
	if _, err := c.MemberRemove(ctx, m1); !errors.Is(err, etcdclient.ErrUnhealthyCluster) {
		t.Fatalf("remove a running voter with one down: %v, want ErrUnhealthyCluster", err)
	}
	// The stopped voter is not in the active quorum: it may go.
	if _, err := c.MemberRemove(ctx, m2); err != nil {
		t.Fatalf("remove the stopped voter: %v", err)
	}
	if _, err := c.MemberRemove(ctx, m2); !errors.Is(err, etcdclient.ErrMemberNotFound) {
		t.Fatalf("remove again: %v, want ErrMemberNotFound", err)
	}
	if got := len(c.Members()); got != 2 {
		t.Fatalf("%d members, want 2", got)
	}
}

func TestClusterNoQuorum(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(3)
	m0, m1, m2 := memberID(t, c, "m0"), memberID(t, c, "m1"), memberID(t, c, "m2")
	for _, id := range []uint64{m1, m2} {
		if err := c.Stop(id); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	if c.Leader() != 0 {
		t.Fatalf("leader %x with 1 of 3 running", c.Leader())
	}
	if _, err := c.MemberRemove(ctx, m2); !errors.Is(err, etcdclient.ErrNoLeader) {
		t.Fatalf("remove without quorum: %v, want ErrNoLeader", err)
	}
	if _, err := c.MemberList(ctx); !errors.Is(err, etcdclient.ErrNoLeader) {
		t.Fatalf("MemberList without quorum: %v, want ErrNoLeader", err)
	}
	st, err := c.Status(ctx, "http://m0:2379")
	if err != nil || st.Leader != 0 || st.ID != m0 {
		t.Fatalf("Status of the survivor: %+v, %v", st, err)
	}
	if _, err := c.Status(ctx, "http://m1:2379"); !errors.Is(err, etcdclient.ErrUnavailable) {
		t.Fatalf("Status of a stopped member: %v, want ErrUnavailable", err)
	}
	if err := c.Restart(m1); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if c.Leader() == 0 {
		t.Fatalf("no leader after quorum returned")
	}
	if len(c.Mutations()) != 1 {
		t.Fatalf("mutations %v, want the one refused remove", c.Mutations())
	}
}

func TestClusterLastVoterAndPromoteQuorum(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(1)
	m0 := memberID(t, c, "m0")
	if _, err := c.MemberRemove(ctx, m0); !errors.Is(err, etcdclient.ErrNotEnoughStartedMembers) {
		t.Fatalf("remove the only voter: %v, want ErrNotEnoughStartedMembers", err)
	}
	// 1 → 2 voters: the learner counts once started and synced.
	l, _, err := c.MemberAddAsLearner(ctx, []string{"http://m1:2380"})
	if err != nil {
		t.Fatalf("add: %v", err)
	}
	if err := c.Start(l.ID, "m1", "http://m1:2379"); err != nil {
		t.Fatal(err)
	}
	if err := c.MarkSynced(l.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MemberPromote(ctx, l.ID); err != nil {
		t.Fatalf("promote: %v", err)
	}
	if _, err := c.MemberPromote(ctx, 42); !errors.Is(err, etcdclient.ErrMemberNotFound) {
		t.Fatalf("promote unknown: %v, want ErrMemberNotFound", err)
	}
	if _, _, err := c.MemberAddAsLearner(ctx, []string{"not a URL"}); !errors.Is(err, etcdclient.ErrInvalidConfig) {
		t.Fatalf("bad URL: %v, want ErrInvalidConfig", err)
	}
}

func TestClusterRemoveLearnerAndMoveLeader(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(3)
	l, _, err := c.MemberAddAsLearner(ctx, []string{"http://m3:2380"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MoveLeader(ctx, l.ID); !errors.Is(err, etcdclient.ErrBadLeaderTransferee) {
		t.Fatalf("move to a learner: %v, want ErrBadLeaderTransferee", err)
	}
	if _, err := c.MemberRemove(ctx, l.ID); err != nil {
		t.Fatalf("remove the learner: %v", err)
	}
	m2 := memberID(t, c, "m2")
	if err := c.MoveLeader(ctx, m2); err != nil || c.Leader() != m2 {
		t.Fatalf("MoveLeader: %v, leader %x", err, c.Leader())
	}
	if err := c.MoveLeader(ctx, m2); err != nil {
		t.Fatalf("MoveLeader to the leader: %v", err)
	}
	m1 := memberID(t, c, "m1")
	if err := c.Stop(m1); err != nil {
		t.Fatal(err)
	}
	if err := c.MoveLeader(ctx, m1); !errors.Is(err, etcdclient.ErrTimeout) {
		t.Fatalf("move to a stopped voter: %v, want ErrTimeout", err)
	}
	// Stopping the leader hands leadership to a running voter.
	if err := c.Stop(m2); err == nil && c.Leader() != 0 {
		t.Fatalf("leader %x with 1 of 3 running", c.Leader())
	}
}

func TestClusterAlarmsAndHashes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(3)
	m1 := memberID(t, c, "m1")
	a := etcdclient.Alarm{MemberID: m1, Type: etcdclient.AlarmNoSpace}
	c.RaiseAlarm(a)
	got, err := c.AlarmList(ctx)
	if err != nil || len(got) != 1 || got[0] != a {
		t.Fatalf("AlarmList: %v, %v", got, err)
	}
	if disarmed, err := c.AlarmDisarm(ctx, a); err != nil || len(disarmed) != 1 {
		t.Fatalf("AlarmDisarm: %v, %v", disarmed, err)
	}
	if got, _ := c.AlarmList(ctx); len(got) != 0 {
		t.Fatalf("alarms left: %v", got)
	}
	var hashes []uint32
	for _, ep := range []string{"http://m0:2379", "http://m1:2379", "http://m2:2379"} {
		h, err := c.HashKV(ctx, ep, 0)
		if err != nil {
			t.Fatalf("HashKV(%s): %v", ep, err)
		}
		hashes = append(hashes, h.Hash)
		if err := c.Defragment(ctx, ep); err != nil {
			t.Fatalf("Defragment(%s): %v", ep, err)
		}
	}
	if hashes[0] != hashes[1] || hashes[1] != hashes[2] {
		t.Fatalf("hashes differ: %v", hashes)
	}
	if got := len(c.Mutations()); got != 4 {
		t.Fatalf("%d mutations, want 4 (a disarm and three defrags)", got)
	}
}
