package etcdfake

import (
	"fmt"
	"slices"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// This file holds what tests drive and read the Cluster fake's world with: processes that start,
// stop and catch up, alarms, the version and raft index members report, and the member list and
// leader as they are. None of it is recorded as a call.

// SetMaxLearners sets etcd's --max-learners (1 by default).
func (c *Cluster) SetMaxLearners(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxLearners = n
}

// Members returns the member list without recording a call.
func (c *Cluster) Members() []etcdclient.Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list()
}

// Leader returns the leader's ID (0: none) without recording a call.
func (c *Cluster) Leader() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// ByPeerURL returns the member that advertises peerURL, without recording a call.
func (c *Cluster) ByPeerURL(peerURL string) (etcdclient.Member, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.byPeerURL(peerURL); m != nil {
		return cloneMember(m.Member), true
	}
	return etcdclient.Member{}, false
}

func (c *Cluster) byPeerURL(peerURL string) *fakeMember {
	for _, m := range c.members {
		if slices.Contains(m.PeerURLs, peerURL) {
			return m
		}
	}
	return nil
}

// MostLearners returns the most learners etcd ever listed at once: the invariant crash tests
// check (never two) holds only while it stays at or below 1.
func (c *Cluster) MostLearners() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mostLearners
}

// countLearners records the number of learners listed now in the high-water mark.
func (c *Cluster) countLearners() {
	n := 0
	for _, m := range c.members {
		if m.IsLearner {
			n++
		}
	}
	c.mostLearners = max(c.mostLearners, n)
}

// Seed forms the cluster from its seed, as an etcd started with --initial-cluster-state=new
// does: one started, running voter with the given name and URLs, which leads. Start from
// NewCluster(0). Once the cluster has members Seed does nothing and returns false: a seed
// restarted on its data directory does not form a new cluster.
func (c *Cluster) Seed(name, peerURL, clientURL string) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.members) > 0 {
		return 0, false
	}
	m := c.newMember([]string{peerURL})
	m.Name, m.ClientURLs = name, []string{clientURL}
	m.started, m.up, m.synced = true, true, true
	c.members = append(c.members, m)
	c.leader = m.ID
	return m.ID, true
}

// Start starts a member's process, or a stopped one's again: it publishes name and clientURL
// (which may differ from the last run's, as a new Pod's IP does) and runs; a voter counts
// towards quorum again. A learner is not in sync until MarkSynced.
func (c *Cluster) Start(id uint64, name, clientURL string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.find(id)
	if m == nil {
		return fmt.Errorf("starting %s: %w", etcdclient.FormatID(id), etcdclient.ErrMemberNotFound)
	}
	m.Name, m.ClientURLs = name, []string{clientURL}
	m.started, m.up = true, true
	c.elect()
	return nil
}

// MarkSynced marks a learner as caught up with the leader.
func (c *Cluster) MarkSynced(id uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.find(id)
	if m == nil {
		return fmt.Errorf("syncing %s: %w", etcdclient.FormatID(id), etcdclient.ErrMemberNotFound)
	}
	m.synced = true
	return nil
}

// Stop stops a member's process (it stays a member). A stopped leader loses leadership.
func (c *Cluster) Stop(id uint64) error {
	return c.setUp(id, false)
}

// Restart starts a stopped member's process again, with the URLs it published last.
func (c *Cluster) Restart(id uint64) error {
	return c.setUp(id, true)
}

func (c *Cluster) setUp(id uint64, up bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.find(id)
	if m == nil {
		return fmt.Errorf("changing %s: %w", etcdclient.FormatID(id), etcdclient.ErrMemberNotFound)
	}
	if !m.started {
		return fmt.Errorf("member %s never started; use Start", etcdclient.FormatID(id))
	}
	m.up = up
	c.elect()
	return nil
}

// Mute makes a running member's Status fail (ErrUnavailable) while muted, though it stays up, a
// voter in quorum and listed: the operator cannot reach its client endpoint, its peers can.
func (c *Cluster) Mute(id uint64, muted bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.find(id)
	if m == nil {
		return fmt.Errorf("muting %s: %w", etcdclient.FormatID(id), etcdclient.ErrMemberNotFound)
	}
	m.muted = muted
	return nil
}

// Elect makes the running voter id the leader, as an election may; it fails for a learner, a
// stopped member or an unknown ID, and while no quorum runs.
func (c *Cluster) Elect(id uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.find(id)
	switch {
	case m == nil:
		return fmt.Errorf("electing %s: %w", etcdclient.FormatID(id), etcdclient.ErrMemberNotFound)
	case m.IsLearner || !m.up:
		return fmt.Errorf("electing %s: %w", etcdclient.FormatID(id), etcdclient.ErrBadLeaderTransferee)
	case c.leader == 0:
		return fmt.Errorf("electing %s: %w", etcdclient.FormatID(id), etcdclient.ErrNoLeader)
	}
	c.leader = id
	return nil
}

// PlantLearner adds a learner under etcd's rules, as MemberAddAsLearner does, but without
// recording a call: a test's stand-in for an add by an operator process that crashed before
// it recorded the member anywhere.
func (c *Cluster) PlantLearner(peerURL string) (etcdclient.Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.addLearner([]string{peerURL})
	if err != nil {
		return etcdclient.Member{}, err
	}
	return cloneMember(m.Member), nil
}

// RaiseAlarm activates an alarm.
func (c *Cluster) RaiseAlarm(a etcdclient.Alarm) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.alarms, a) {
		c.alarms = append(c.alarms, a)
	}
}

// Alarms returns the active alarms without recording a call.
func (c *Cluster) Alarms() []etcdclient.Alarm {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.alarms)
}

// SetVersion makes every member report version v in Status (Version by default), as members
// that all run one release do.
func (c *Cluster) SetVersion(v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version = v
}

// SetRaftIndex sets the raft index every member reports committed and applied, as if entries
// were written up to it; later membership changes count on from there.
func (c *Cluster) SetRaftIndex(i uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raftIndex = i
}

// LogTail returns, for the running member serving clientURL, what the data-dir guard would read
// from its WAL: its ID and the last entry (term 1, the cluster's raft index). False when no
// running member serves it.
func (c *Cluster) LogTail(clientURL string) (id, term, index uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byEndpoint(clientURL)
	if m == nil || !m.up {
		return 0, 0, 0, false
	}
	return m.ID, 1, c.raftIndex, true
}

// ForceNewCluster plays etcd started with --force-new-cluster on member id: every other member
// is dropped from the membership, id becomes the only voter and leads.
func (c *Cluster) ForceNewCluster(id uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.find(id)
	if m == nil || !m.up {
		return fmt.Errorf("forcing a new cluster on %s: %w", etcdclient.FormatID(id), etcdclient.ErrMemberNotFound)
	}
	m.IsLearner = false
	c.members = []*fakeMember{m}
	c.raftIndex++
	c.leader = id
	return nil
}
