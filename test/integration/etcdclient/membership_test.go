package etcdclient_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// TestLearnerAddAndPromote plays one scale-up step against a real 3-member cluster: add a
// learner, see a second learner and a duplicate peer URL refused, start the learner with
// --initial-cluster-state=existing, promote it once etcd reports it in sync, and find 4 voters.
func TestLearnerAddAndPromote(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, 3)
	cli := dial(ctx, t, c.Endpoints())

	joiner, err := c.PrepareMember("m3")
	if err != nil {
		t.Fatalf("preparing m3: %v", err)
	}
	var added etcdclient.Member
	var list []etcdclient.Member
	// A fresh cluster refuses adds until the leader has been connected to every voter for 5 s.
	attempts, err := retry(ctx, func(ctx context.Context) error {
		var err error
		added, list, err = cli.MemberAddAsLearner(ctx, []string{joiner.PeerURL})
		return err
	}, etcdclient.ErrUnhealthyCluster)
	if err != nil {
		t.Fatalf("MemberAddAsLearner: %v", err)
	}
	t.Logf("learner %s added after %d attempt(s)", added.IDHex(), attempts)
	if !added.IsLearner || added.Started() || len(list) != 4 {
		t.Fatalf("added %+v with %d members; want an unstarted learner of 4", added, len(list))
	}

	// etcd admits one learner at a time.
	other, err := c.PrepareMember("m4")
	if err != nil {
		t.Fatalf("preparing m4: %v", err)
	}
	if _, _, err := cli.MemberAddAsLearner(ctx, []string{other.PeerURL}); !errors.Is(err, etcdclient.ErrTooManyLearners) {
		t.Fatalf("second learner: %v, want ErrTooManyLearners", err)
	}
	// Re-adding the same peer URL (a retried pass) is told apart.
	if _, _, err := cli.MemberAddAsLearner(ctx, []string{joiner.PeerURL}); !errors.Is(err, etcdclient.ErrPeerURLExists) {
		t.Fatalf("re-add: %v, want ErrPeerURLExists", err)
	}
	// An unstarted learner is not in sync.
	if _, err := cli.MemberPromote(ctx, added.ID); !errors.Is(err, etcdclient.ErrLearnerNotReady) {
		t.Fatalf("promoting an unstarted learner: %v, want ErrLearnerNotReady", err)
	}
	// Leadership never goes to a learner.
	if err := cli.MoveLeader(ctx, added.ID); !errors.Is(err, etcdclient.ErrBadLeaderTransferee) {
		t.Fatalf("MoveLeader to a learner: %v, want ErrBadLeaderTransferee", err)
	}

	if err := joiner.StartJoining(initialCluster(list, joiner.Name, joiner.PeerURL)); err != nil {
		t.Fatalf("starting m3: %v", err)
	}
	start := time.Now()
	attempts, err = retry(ctx, func(ctx context.Context) error {
		_, err := cli.MemberPromote(ctx, added.ID)
		return err
	}, etcdclient.ErrLearnerNotReady)
	if err != nil {
		t.Fatalf("MemberPromote: %v", err)
	}
	t.Logf("learner promoted %s after its start, %d attempt(s)", time.Since(start).Round(time.Millisecond), attempts)
	if _, err := cli.MemberPromote(ctx, added.ID); !errors.Is(err, etcdclient.ErrMemberNotLearner) {
		t.Fatalf("promoting a voter: %v, want ErrMemberNotLearner", err)
	}

	list, err = cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("MemberList: %v", err)
	}
	m3, ok := memberByName(list, "m3")
	if len(list) != 4 || !ok || m3.IsLearner || m3.ID != added.ID || len(m3.ClientURLs) != 1 || m3.ClientURLs[0] != joiner.ClientURL {
		t.Fatalf("member list after promotion: %+v", list)
	}
	for _, m := range list {
		if m.IsLearner || !m.Started() {
			t.Errorf("member %+v: want a started voter", m)
		}
	}
	// The promoted member answers Status as a voter with the cluster's leader.
	st, err := cli.Status(ctx, joiner.ClientURL)
	if err != nil || st.ID != added.ID || st.IsLearner || st.Leader == 0 {
		t.Fatalf("Status of m3: %+v, %v", st, err)
	}

	// A learner can also be removed, which is how an unstarted or wedged learner is replaced.
	l2, _, err := cli.MemberAddAsLearner(ctx, []string{other.PeerURL})
	if err != nil {
		t.Fatalf("adding m4: %v", err)
	}
	if _, err := cli.MemberRemove(ctx, l2.ID); err != nil {
		t.Fatalf("removing learner m4: %v", err)
	}
	if _, err := cli.MemberRemove(ctx, l2.ID); !errors.Is(err, etcdclient.ErrMemberNotFound) {
		t.Fatalf("removing m4 again: %v, want ErrMemberNotFound", err)
	}
}

// TestMemberRemoveNeedsQuorum shows etcd's strict reconfiguration check and quorum loss through
// the adapter's classified errors: with one of three members down, removing a running voter is
// refused (it would leave 1 running of 2) while removing the stopped one is allowed; with two
// down, nothing commits.
func TestMemberRemoveNeedsQuorum(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, 3)
	// Dial only the survivor, as an operator that can reach one member would.
	survivor := c.Members[0]
	cli := dial(ctx, t, []string{survivor.ClientURL})
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("MemberList: %v", err)
	}
	ids := map[string]uint64{}
	for _, m := range list {
		ids[m.Name] = m.ID
	}

	if err := c.Members[2].Stop(ctx); err != nil {
		t.Fatalf("stopping m2: %v", err)
	}
	// The leader notices m2 is gone within a heartbeat or two; until then etcd may still
	// count it as active, so poll until the refusal shows.
	_, err = retry(ctx, func(ctx context.Context) error {
		_, err := cli.MemberRemove(ctx, ids["m1"])
		if err == nil {
			return errors.New("removing m1 with m2 down succeeded")
		}
		if errors.Is(err, etcdclient.ErrUnhealthyCluster) {
			return nil
		}
		return err
	}, etcdclient.ErrNoLeader, etcdclient.ErrTimeout)
	if err != nil {
		t.Fatalf("removing running m1 with m2 down: %v, want ErrUnhealthyCluster", err)
	}

	if err := c.Members[1].Stop(ctx); err != nil {
		t.Fatalf("stopping m1: %v", err)
	}
	// The survivor steps down within an election timeout once it cannot reach a quorum.
	if _, err := retry(ctx, func(ctx context.Context) error {
		st, err := cli.Status(ctx, survivor.ClientURL)
		if err == nil && st.Leader != 0 {
			return fmt.Errorf("%w: survivor still follows %s", etcdclient.ErrTimeout, etcdclient.FormatID(st.Leader))
		}
		return err
	}, etcdclient.ErrTimeout); err != nil {
		t.Fatalf("waiting for the survivor to lose its leader: %v", err)
	}
	// Membership calls carry "require leader": without quorum they fail at once, and no
	// proposal is left behind to be applied later.
	start := time.Now()
	if _, err := cli.MemberRemove(ctx, ids["m2"]); !errors.Is(err, etcdclient.ErrNoLeader) {
		t.Fatalf("removing m2 with 2 of 3 down: %v, want ErrNoLeader", err)
	}
	t.Logf("remove without quorum refused after %s", time.Since(start).Round(time.Millisecond))
	if _, err := cli.MemberList(ctx); !errors.Is(err, etcdclient.ErrNoLeader) && !errors.Is(err, etcdclient.ErrTimeout) {
		t.Fatalf("MemberList without quorum: %v, want ErrNoLeader or ErrTimeout", err)
	}
	// Status is local: the survivor still answers, knowing no leader.
	st, err := cli.Status(ctx, survivor.ClientURL)
	if err != nil || st.ID != ids["m0"] {
		t.Fatalf("Status of the survivor: %+v, %v", st, err)
	}
	// A stopped member's Status fails as a timeout or as unavailable, never unclassified.
	if _, err := cli.Status(ctx, c.Members[1].ClientURL); !errors.Is(err, etcdclient.ErrTimeout) && !errors.Is(err, etcdclient.ErrUnavailable) {
		t.Fatalf("Status of a stopped member: %v, want ErrTimeout or ErrUnavailable", err)
	}

	// Quorum back (2 of 3): the stopped member may now be removed.
	if err := c.Members[1].Start(); err != nil {
		t.Fatalf("restarting m1: %v", err)
	}
	if err := c.Members[1].WaitHealthy(ctx); err != nil {
		t.Fatalf("waiting for m1: %v", err)
	}
	// ErrTimeout means "maybe applied later": a retry then finds the member gone, which an
	// idempotent remove counts as success (docs/design/crash-safety.md, "Rules every step follows").
	if _, err := retry(ctx, func(ctx context.Context) error {
		_, err := cli.MemberRemove(ctx, ids["m2"])
		if errors.Is(err, etcdclient.ErrMemberNotFound) {
			return nil
		}
		return err
	}, etcdclient.ErrNoLeader, etcdclient.ErrTimeout, etcdclient.ErrUnhealthyCluster); err != nil {
		t.Fatalf("removing stopped m2 with quorum: %v", err)
	}
	list, err = cli.MemberList(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("MemberList after removal: %+v, %v", list, err)
	}
}
