package etcdfake_test

import (
	"errors"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
)

func TestClusterSeedFormsOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(0)
	if _, err := c.MemberList(ctx); !errors.Is(err, etcdclient.ErrNoLeader) {
		t.Fatalf("MemberList before the seed: %v, want ErrNoLeader", err)
	}
	id, ok := c.Seed("seed", "http://seed:2380", "http://10.0.0.1:2379")
	if !ok || c.Leader() != id {
		t.Fatalf("Seed = %x, %v; leader %x", id, ok, c.Leader())
	}
	list, err := c.MemberList(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "seed" || list[0].IsLearner || !list[0].Started() {
		t.Fatalf("MemberList after the seed: %+v, %v", list, err)
	}
	if _, ok := c.Seed("other", "http://other:2380", "http://10.0.0.2:2379"); ok {
		t.Fatal("a second seed formed a cluster over the first")
	}
	if m, ok := c.ByPeerURL("http://seed:2380"); !ok || m.ID != id {
		t.Fatalf("ByPeerURL = %+v, %v", m, ok)
	}
	if _, ok := c.ByPeerURL("http://other:2380"); ok {
		t.Fatal("ByPeerURL found the refused seed")
	}
	if got := c.Calls(); len(got) != 2 || c.Count(etcdfake.MemberList) != 2 {
		t.Fatalf("calls %v, want the two MemberLists only", got)
	}
}

func TestClusterStartRepublishesAndRestoresQuorum(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(3)
	m1, m2 := memberID(t, c, "m1"), memberID(t, c, "m2")
	for _, id := range []uint64{m1, m2} {
		if err := c.Stop(id); err != nil {
			t.Fatal(err)
		}
	}
	if c.Leader() != 0 {
		t.Fatalf("leader %x with 1 of 3 running", c.Leader())
	}
	// m1 comes back in a new Pod, at a new address.
	if err := c.Start(m1, "m1", "http://10.0.0.9:2379"); err != nil {
		t.Fatal(err)
	}
	if c.Leader() == 0 {
		t.Fatal("no leader once 2 of 3 run")
	}
	if _, err := c.Status(ctx, "http://m1:2379"); !errors.Is(err, etcdclient.ErrUnavailable) {
		t.Fatalf("Status at the old address: %v, want ErrUnavailable", err)
	}
	if st, err := c.Status(ctx, "http://10.0.0.9:2379"); err != nil || st.ID != m1 {
		t.Fatalf("Status at the new address: %+v, %v", st, err)
	}
	if err := c.Start(42, "x", "http://x:2379"); !errors.Is(err, etcdclient.ErrMemberNotFound) {
		t.Fatalf("Start of an unknown member: %v, want ErrMemberNotFound", err)
	}
}

func TestClusterMuteFailsOnlyStatus(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(3)
	m2 := memberID(t, c, "m2")
	if err := c.Mute(m2, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx, "http://m2:2379"); !errors.Is(err, etcdclient.ErrUnavailable) {
		t.Fatalf("Status of a muted member: %v, want ErrUnavailable", err)
	}
	// It still runs: every voter is up, so an add passes the strict reconfiguration check.
	if _, _, err := c.MemberAddAsLearner(ctx, []string{"http://m3:2380"}); err != nil {
		t.Fatalf("add while a voter is muted: %v", err)
	}
	if err := c.Mute(m2, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx, "http://m2:2379"); err != nil {
		t.Fatalf("Status once unmuted: %v", err)
	}
	if err := c.Mute(42, true); !errors.Is(err, etcdclient.ErrMemberNotFound) {
		t.Fatalf("Mute of an unknown member: %v, want ErrMemberNotFound", err)
	}
}

func TestClusterElect(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(3)
	m1, m2 := memberID(t, c, "m1"), memberID(t, c, "m2")
	if err := c.Elect(m2); err != nil || c.Leader() != m2 {
		t.Fatalf("Elect: %v, leader %x", err, c.Leader())
	}
	l, err := c.PlantLearner("http://m3:2380")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Elect(l.ID); !errors.Is(err, etcdclient.ErrBadLeaderTransferee) {
		t.Fatalf("Elect a learner: %v, want ErrBadLeaderTransferee", err)
	}
	if err := c.Stop(m1); err != nil {
		t.Fatal(err)
	}
	if err := c.Elect(m1); !errors.Is(err, etcdclient.ErrBadLeaderTransferee) {
		t.Fatalf("Elect a stopped voter: %v, want ErrBadLeaderTransferee", err)
	}
	if st, err := c.Status(ctx, "http://m0:2379"); err != nil || st.Leader != m2 {
		t.Fatalf("Status names leader %x (%v), want %x", st.Leader, err, m2)
	}
	if len(c.Calls()) != 1 {
		t.Fatalf("calls %v: Elect and PlantLearner must not be recorded", c.Calls())
	}
}

func TestClusterPlantLearnerKeepsTheRules(t *testing.T) {
	t.Parallel()
	c := etcdfake.NewCluster(3)
	l, err := c.PlantLearner("http://stray:2380")
	if err != nil || !l.IsLearner || l.Started() {
		t.Fatalf("PlantLearner = %+v, %v", l, err)
	}
	if _, err := c.PlantLearner("http://stray2:2380"); !errors.Is(err, etcdclient.ErrTooManyLearners) {
		t.Fatalf("a second learner: %v, want ErrTooManyLearners", err)
	}
	if c.MostLearners() != 1 {
		t.Fatalf("MostLearners = %d, want 1", c.MostLearners())
	}
	c.SetMaxLearners(2)
	if _, err := c.PlantLearner("http://stray2:2380"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MemberRemove(t.Context(), l.ID); err != nil {
		t.Fatal(err)
	}
	if c.MostLearners() != 2 {
		t.Fatalf("MostLearners = %d after two learners at once, want 2 (a high-water mark)", c.MostLearners())
	}
	if len(c.Mutations()) != 1 {
		t.Fatalf("mutations %v, want the one remove", c.Mutations())
	}
}

func TestClusterVersionRaftIndexAndAlarms(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := etcdfake.NewCluster(1)
	st, err := c.Status(ctx, "http://m0:2379")
	if err != nil || st.Version != etcdfake.Version {
		t.Fatalf("Status: %+v, %v", st, err)
	}
	c.SetVersion("3.5.35")
	c.SetRaftIndex(10)
	if st, _ = c.Status(ctx, "http://m0:2379"); st.Version != "3.5.35" || st.RaftIndex != 10 || st.RaftAppliedIndex != 10 {
		t.Fatalf("Status after SetVersion and SetRaftIndex: %+v", st)
	}
	if _, _, err := c.MemberAddAsLearner(ctx, []string{"http://m1:2380"}); err != nil {
		t.Fatal(err)
	}
	if st, _ = c.Status(ctx, "http://m0:2379"); st.RaftIndex != 11 {
		t.Fatalf("raft index %d after a membership change, want 11", st.RaftIndex)
	}
	a := etcdclient.Alarm{MemberID: memberID(t, c, "m0"), Type: etcdclient.AlarmCorrupt}
	c.RaiseAlarm(a)
	if got := c.Alarms(); len(got) != 1 || got[0] != a {
		t.Fatalf("Alarms = %v", got)
	}
	if c.Count(etcdfake.AlarmList) != 0 {
		t.Fatal("Alarms was recorded as an AlarmList call")
	}
}
