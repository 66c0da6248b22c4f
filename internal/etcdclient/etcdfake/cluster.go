package etcdfake

import (
	"context"
	"fmt"
	"hash/crc32"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Version is the etcd version the Cluster fake reports in Status unless SetVersion changed it.
const Version = "3.6.16"

// Cluster is an etcdclient.Client that models the membership rules of a real etcd cluster with
// --strict-reconfig-check on (the default), so that planners and step functions fail in unit
// tests the way they fail against etcd:
//
//   - a change needs a leader, i.e. a quorum of running voters (ErrNoLeader otherwise);
//   - a member add needs every voter running, since etcd refuses it until the leader has been
//     connected to all voters (ErrUnhealthyCluster; the 5 s connection age is not modelled);
//   - a peer URL can belong to one member only (ErrPeerURLExists);
//   - one learner at a time (ErrTooManyLearners);
//   - a learner is promoted only once started and marked in sync (ErrLearnerNotReady), and the
//     promotion needs a quorum of started voters counting it (ErrNotEnoughStartedMembers);
//   - promoting a voter fails (ErrMemberNotLearner); an unknown ID fails (ErrMemberNotFound);
//   - removing a voter needs a quorum of started voters without it (ErrNotEnoughStartedMembers)
//     and, when it is running, a quorum of running voters without it (ErrUnhealthyCluster);
//   - leadership moves only to a voter (ErrBadLeaderTransferee), and only a running one.
//
// Tests drive the world through Seed, Start, MarkSynced, Stop, Restart, Mute, Elect,
// PlantLearner, RaiseAlarm, SetVersion and SetRaftIndex, and read it through Members,
// ByPeerURL, Leader, Alarms and MostLearners; none of these is recorded as a call.
//
// The rules follow etcd's server (mayAddMember, mayPromoteMember, mayRemoveMember and
// ValidateConfigurationChange; https://etcd.io/docs/v3.6/op-guide/runtime-configuration/#strict-reconfiguration-check-mode).
type Cluster struct {
	callLog

	mu          sync.Mutex
	members     []*fakeMember
	leader      uint64
	nextID      uint64
	maxLearners int
	alarms      []etcdclient.Alarm
	revision    int64
	raftIndex   uint64
	// version is what Status reports; Version when empty.
	version string
	// mostLearners is the most learners ever listed at once.
	mostLearners int
	// authOn and rootPassword are etcd's auth state.
	authOn       bool
	rootPassword string
}

type fakeMember struct {
	etcdclient.Member
	// started is true once the member's process has run and published its name; it stays
	// true while the member is stopped (etcd's "started" is about having joined).
	started bool
	// up is true while the member's process runs.
	up bool
	// synced is true once a learner has caught up with the leader.
	synced bool
	// muted fails the member's Status while it runs: the operator cannot reach it.
	muted bool
}

var _ etcdclient.Client = (*Cluster)(nil)

// NewCluster returns a running cluster of size voters named m0, m1, ... with peer URLs
// http://<name>:2380 and client URLs http://<name>:2379; m0 leads.
func NewCluster(size int) *Cluster {
	c := &Cluster{nextID: 0x1000, maxLearners: 1, revision: 1, raftIndex: 1}
	for i := range size {
		name := fmt.Sprintf("m%d", i)
		m := c.newMember([]string{"http://" + name + ":2380"})
		m.Name, m.ClientURLs = name, []string{"http://" + name + ":2379"}
		m.started, m.up, m.synced = true, true, true
		c.members = append(c.members, m)
	}
	if len(c.members) > 0 {
		c.leader = c.members[0].ID
	}
	return c
}

// newMember allocates a member ID. IDs are deterministic so that tests can name them.
func (c *Cluster) newMember(peerURLs []string) *fakeMember {
	c.nextID++
	return &fakeMember{Member: etcdclient.Member{ID: c.nextID<<32 | 0xe7cd, PeerURLs: slices.Clone(peerURLs)}}
}

// elect keeps the leader while it is a running voter and a quorum of voters runs; otherwise
// the first running voter leads if a quorum runs, else nobody does.
func (c *Cluster) elect() {
	voters, up := c.voterCounts()
	if up < quorum.Of(voters) {
		c.leader = 0
		return
	}
	if l := c.find(c.leader); l != nil && l.up && !l.IsLearner {
		return
	}
	for _, m := range c.members {
		if !m.IsLearner && m.up {
			c.leader = m.ID
			return
		}
	}
}

// voterCounts returns the number of voters and of running voters.
func (c *Cluster) voterCounts() (voters, up int) {
	for _, m := range c.members {
		if m.IsLearner {
			continue
		}
		voters++
		if m.up {
			up++
		}
	}
	return voters, up
}

func (c *Cluster) startedVoters() int {
	n := 0
	for _, m := range c.members {
		if !m.IsLearner && m.started {
			n++
		}
	}
	return n
}

func (c *Cluster) find(id uint64) *fakeMember {
	if id == 0 {
		return nil
	}
	for _, m := range c.members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (c *Cluster) byEndpoint(endpoint string) *fakeMember {
	for _, m := range c.members {
		if slices.Contains(m.ClientURLs, endpoint) {
			return m
		}
	}
	return nil
}

func (c *Cluster) list() []etcdclient.Member {
	out := make([]etcdclient.Member, 0, len(c.members))
	for _, m := range c.members {
		out = append(out, cloneMember(m.Member))
	}
	return out
}

func fail(m Method, kind error) error { return etcdclient.NewError(string(m), kind) }

// MemberList implements etcdclient.Client; it is a linearizable read, so it needs a leader.
func (c *Cluster) MemberList(context.Context) ([]etcdclient.Member, error) {
	c.record(MemberList, "")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == 0 {
		return nil, fail(MemberList, etcdclient.ErrNoLeader)
	}
	return c.list(), nil
}

// LocalMemberList implements etcdclient.Client: the member's own view, served without a
// leader by any member that is up.
func (c *Cluster) LocalMemberList(_ context.Context, endpoint string) ([]etcdclient.Member, error) {
	c.record(LocalMemberList, endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.byEndpoint(endpoint); m == nil || !m.up || m.muted {
		return nil, fail(LocalMemberList, etcdclient.ErrUnavailable)
	}
	return c.list(), nil
}

// MemberAddAsLearner implements etcdclient.Client.
func (c *Cluster) MemberAddAsLearner(_ context.Context, peerURLs []string) (etcdclient.Member, []etcdclient.Member, error) {
	c.record(MemberAddAsLearner, strings.Join(peerURLs, ","))
	c.mu.Lock()
	defer c.mu.Unlock()
	if !validURLs(peerURLs) {
		return etcdclient.Member{}, nil, fail(MemberAddAsLearner, etcdclient.ErrInvalidConfig)
	}
	m, err := c.addLearner(peerURLs)
	if err != nil {
		return etcdclient.Member{}, nil, err
	}
	return cloneMember(m.Member), c.list(), nil
}

// addLearner applies etcd's rules for a learner add, after the URL check; the caller holds mu.
func (c *Cluster) addLearner(peerURLs []string) (*fakeMember, error) {
	if c.leader == 0 {
		return nil, fail(MemberAddAsLearner, etcdclient.ErrNoLeader)
	}
	if voters, up := c.voterCounts(); up < voters {
		return nil, fail(MemberAddAsLearner, etcdclient.ErrUnhealthyCluster)
	}
	learners := 0
	for _, m := range c.members {
		for _, u := range peerURLs {
			if slices.Contains(m.PeerURLs, u) {
				return nil, fail(MemberAddAsLearner, etcdclient.ErrPeerURLExists)
			}
		}
		if m.IsLearner {
			learners++
		}
	}
	if learners >= c.maxLearners {
		return nil, fail(MemberAddAsLearner, etcdclient.ErrTooManyLearners)
	}
	m := c.newMember(peerURLs)
	m.IsLearner = true
	c.members = append(c.members, m)
	c.revision++
	c.raftIndex++
	c.countLearners()
	return m, nil
}

// MemberPromote implements etcdclient.Client.
func (c *Cluster) MemberPromote(_ context.Context, id uint64) ([]etcdclient.Member, error) {
	c.record(MemberPromote, etcdclient.FormatID(id))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == 0 {
		return nil, fail(MemberPromote, etcdclient.ErrNoLeader)
	}
	m := c.find(id)
	switch {
	case m == nil:
		return nil, fail(MemberPromote, etcdclient.ErrMemberNotFound)
	case !m.IsLearner:
		return nil, fail(MemberPromote, etcdclient.ErrMemberNotLearner)
	case !m.up || !m.synced:
		return nil, fail(MemberPromote, etcdclient.ErrLearnerNotReady)
	}
	voters, _ := c.voterCounts()
	if c.startedVoters()+1 < quorum.Of(voters+1) {
		return nil, fail(MemberPromote, etcdclient.ErrNotEnoughStartedMembers)
	}
	m.IsLearner = false
	c.revision++
	c.raftIndex++
	return c.list(), nil
}

// MemberRemove implements etcdclient.Client.
func (c *Cluster) MemberRemove(_ context.Context, id uint64) ([]etcdclient.Member, error) {
	c.record(MemberRemove, etcdclient.FormatID(id))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == 0 {
		return nil, fail(MemberRemove, etcdclient.ErrNoLeader)
	}
	m := c.find(id)
	if m == nil {
		return nil, fail(MemberRemove, etcdclient.ErrMemberNotFound)
	}
	if !m.IsLearner {
		voters, up := c.voterCounts()
		q := quorum.Of(voters - 1)
		started := c.startedVoters()
		if m.started {
			started--
		}
		if started < q {
			return nil, fail(MemberRemove, etcdclient.ErrNotEnoughStartedMembers)
		}
		// A stopped member is not part of the active quorum, so etcd lets it go.
		if m.up && up-1 < q {
			return nil, fail(MemberRemove, etcdclient.ErrUnhealthyCluster)
		}
	}
	c.members = slices.DeleteFunc(c.members, func(x *fakeMember) bool { return x.ID == id })
	c.revision++
	c.raftIndex++
	c.elect()
	return c.list(), nil
}

// MoveLeader implements etcdclient.Client.
func (c *Cluster) MoveLeader(_ context.Context, to uint64) error {
	c.record(MoveLeader, etcdclient.FormatID(to))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == 0 {
		return fail(MoveLeader, etcdclient.ErrNoLeader)
	}
	m := c.find(to)
	switch {
	case m == nil || m.IsLearner:
		return fail(MoveLeader, etcdclient.ErrBadLeaderTransferee)
	case m.ID == c.leader:
		return nil
	case !m.up:
		return fail(MoveLeader, etcdclient.ErrTimeout)
	}
	c.leader = to
	return nil
}

// Status implements etcdclient.Client.
func (c *Cluster) Status(_ context.Context, endpoint string) (etcdclient.Status, error) {
	c.record(Status, endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byEndpoint(endpoint)
	if m == nil || !m.up || m.muted {
		return etcdclient.Status{}, fail(Status, etcdclient.ErrUnavailable)
	}
	idx := c.raftIndex
	v := c.version
	if v == "" {
		v = Version
	}
	return etcdclient.Status{
		Endpoint:         endpoint,
		ID:               m.ID,
		Leader:           c.leader,
		Version:          v,
		DBSize:           1 << 20,
		DBSizeInUse:      1 << 19,
		RaftIndex:        idx,
		RaftAppliedIndex: idx,
		RaftTerm:         2,
		IsLearner:        m.IsLearner,
		Revision:         c.revision,
	}, nil
}

// AlarmList implements etcdclient.Client.
func (c *Cluster) AlarmList(context.Context) ([]etcdclient.Alarm, error) {
	c.record(AlarmList, "")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == 0 {
		return nil, fail(AlarmList, etcdclient.ErrNoLeader)
	}
	return slices.Clone(c.alarms), nil
}

// AlarmDisarm implements etcdclient.Client.
func (c *Cluster) AlarmDisarm(_ context.Context, a etcdclient.Alarm) ([]etcdclient.Alarm, error) {
	c.record(AlarmDisarm, alarmArg(a))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == 0 {
		return nil, fail(AlarmDisarm, etcdclient.ErrNoLeader)
	}
	i := slices.Index(c.alarms, a)
	if i < 0 {
		return nil, nil
	}
	c.alarms = slices.Delete(c.alarms, i, i+1)
	return []etcdclient.Alarm{a}, nil
}

// Defragment implements etcdclient.Client.
func (c *Cluster) Defragment(_ context.Context, endpoint string) error {
	c.record(Defragment, endpoint)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.byEndpoint(endpoint); m == nil || !m.up {
		return fail(Defragment, etcdclient.ErrUnavailable)
	}
	return nil
}

// HashKV implements etcdclient.Client. Every running member applied the same history, so all
// report the same hash for a revision.
func (c *Cluster) HashKV(_ context.Context, endpoint string, rev int64) (etcdclient.HashKV, error) {
	c.record(HashKV, endpoint+" rev="+strconv.FormatInt(rev, 10))
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byEndpoint(endpoint)
	if m == nil || !m.up {
		return etcdclient.HashKV{}, fail(HashKV, etcdclient.ErrUnavailable)
	}
	if rev <= 0 || rev > c.revision {
		rev = c.revision
	}
	return etcdclient.HashKV{
		Endpoint:     endpoint,
		MemberID:     m.ID,
		Hash:         crc32.ChecksumIEEE([]byte(strconv.FormatInt(rev, 10))),
		HashRevision: rev,
		Revision:     c.revision,
	}, nil
}

func validURLs(urls []string) bool {
	if len(urls) == 0 {
		return false
	}
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return false
		}
	}
	return true
}
