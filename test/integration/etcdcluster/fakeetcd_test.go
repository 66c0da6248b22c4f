package etcdcluster_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// fakeVersion is the version every fake member reports, unless the test set fakeEtcd.version.
const fakeVersion = "3.6.16"

// fakeEtcd is one etcd cluster with etcd's membership rules under --strict-reconfig-check: a
// change needs a leader (a quorum of running voters); an add needs every voter running and no
// other learner, and a peer URL unique; a promotion needs the learner started and caught up; a
// removal needs a quorum of running voters without the removed one; leadership moves to running
// voters only. It also checks the invariant the crash tests care about: never two learners.
//
// The fake from internal/etcdclient/etcdfake cannot be bootstrapped from a seed with a given name
// and peer URL, which these tests need, so this one is local to the suite.
type fakeEtcd struct {
	mu       sync.Mutex
	members  []*fakeMember
	leader   uint64
	nextID   uint64
	calls    []string
	maxLearn int // most learners ever listed at once
	alarms   []etcdclient.Alarm
	version  string // what Status reports; fakeVersion when empty
	index    uint64 // the raft index (committed and applied) Status reports; 10 when lower
}

type fakeMember struct {
	etcdclient.Member
	up bool
	// mute fails the member's Status while it stays up and listed: the operator cannot reach
	// its endpoint, though its Pod is Ready.
	mute bool
}

// setMute makes the member named name stop (or start again) answering Status.
func (f *fakeEtcd) setMute(name string, mute bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.Name == name {
			m.mute = mute
		}
	}
}

func (f *fakeEtcd) record(call string) {
	f.calls = append(f.calls, call)
}

// mutations returns the mutating calls made so far.
func (f *fakeEtcd) mutations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if !strings.HasPrefix(c, "MemberList") && !strings.HasPrefix(c, "Status") && !strings.HasPrefix(c, "AlarmList") {
			out = append(out, c)
		}
	}
	return out
}

// snapshot returns the member list without recording a call.
func (f *fakeEtcd) snapshot() []etcdclient.Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.list()
}

func (f *fakeEtcd) list() []etcdclient.Member {
	out := make([]etcdclient.Member, 0, len(f.members))
	for _, m := range f.members {
		c := m.Member
		c.PeerURLs = slices.Clone(m.PeerURLs)
		c.ClientURLs = slices.Clone(m.ClientURLs)
		out = append(out, c)
	}
	return out
}

func (f *fakeEtcd) find(id uint64) *fakeMember {
	for _, m := range f.members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (f *fakeEtcd) byPeer(peer string) *fakeMember {
	for _, m := range f.members {
		if slices.Contains(m.PeerURLs, peer) {
			return m
		}
	}
	return nil
}

// voters returns the number of voters and of running voters.
func (f *fakeEtcd) voters(except uint64) (all, up int) {
	for _, m := range f.members {
		if m.IsLearner || m.ID == except {
			continue
		}
		all++
		if m.up {
			up++
		}
	}
	return all, up
}

// elect keeps a running leader, or picks the first running voter when a quorum runs.
func (f *fakeEtcd) elect() {
	all, up := f.voters(0)
	if up < all/2+1 {
		f.leader = 0
		return
	}
	if l := f.find(f.leader); l != nil && l.up && !l.IsLearner {
		return
	}
	f.leader = 0
	for _, m := range f.members {
		if !m.IsLearner && m.up {
			f.leader = m.ID
			return
		}
	}
}

func (f *fakeEtcd) countLearners() {
	n := 0
	for _, m := range f.members {
		if m.IsLearner {
			n++
		}
	}
	f.maxLearn = max(f.maxLearn, n)
}

// bootstrap forms the cluster from its seed (--initial-cluster-state=new).
func (f *fakeEtcd) bootstrap(name, peer, client string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.members) > 0 {
		return
	}
	f.nextID++
	m := &fakeMember{Member: etcdclient.Member{ID: f.nextID<<8 | 0x5e, Name: name, PeerURLs: []string{peer}, ClientURLs: []string{client}}, up: true}
	f.members = append(f.members, m)
	f.leader = m.ID
}

// start runs the process of the member with peer URL peer (a learner catches up at once).
// It reports whether etcd knows the member: an unknown one would exit, as etcd does.
func (f *fakeEtcd) start(name, peer, client string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.byPeer(peer)
	if m == nil {
		return false
	}
	m.Name, m.ClientURLs, m.up = name, []string{client}, true
	f.elect()
	return true
}

// stop stops the process of the member with peer URL peer.
func (f *fakeEtcd) stop(peer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.byPeer(peer); m != nil {
		m.up = false
		f.elect()
	}
}

func failf(op string, kind error) error { return etcdclient.NewError(op, kind) }

// MemberList implements etcdclient.Client.
func (f *fakeEtcd) MemberList(context.Context) ([]etcdclient.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("MemberList")
	if f.leader == 0 {
		return nil, failf("MemberList", etcdclient.ErrNoLeader)
	}
	return f.list(), nil
}

// MemberAddAsLearner implements etcdclient.Client.
func (f *fakeEtcd) MemberAddAsLearner(_ context.Context, peerURLs []string) (etcdclient.Member, []etcdclient.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("MemberAddAsLearner(" + strings.Join(peerURLs, ",") + ")")
	if f.leader == 0 {
		return etcdclient.Member{}, nil, failf("MemberAddAsLearner", etcdclient.ErrNoLeader)
	}
	if all, up := f.voters(0); up < all {
		return etcdclient.Member{}, nil, failf("MemberAddAsLearner", etcdclient.ErrUnhealthyCluster)
	}
	for _, m := range f.members {
		if m.IsLearner {
			return etcdclient.Member{}, nil, failf("MemberAddAsLearner", etcdclient.ErrTooManyLearners)
		}
		if slices.Contains(m.PeerURLs, peerURLs[0]) {
			return etcdclient.Member{}, nil, failf("MemberAddAsLearner", etcdclient.ErrPeerURLExists)
		}
	}
	f.nextID++
	m := &fakeMember{Member: etcdclient.Member{ID: f.nextID<<8 | 0x5e, PeerURLs: slices.Clone(peerURLs), IsLearner: true}}
	f.members = append(f.members, m)
	f.countLearners()
	return m.Member, f.list(), nil
}

// MemberPromote implements etcdclient.Client.
func (f *fakeEtcd) MemberPromote(_ context.Context, id uint64) ([]etcdclient.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("MemberPromote(" + etcdclient.FormatID(id) + ")")
	if f.leader == 0 {
		return nil, failf("MemberPromote", etcdclient.ErrNoLeader)
	}
	m := f.find(id)
	switch {
	case m == nil:
		return nil, failf("MemberPromote", etcdclient.ErrMemberNotFound)
	case !m.IsLearner:
		return nil, failf("MemberPromote", etcdclient.ErrMemberNotLearner)
	case !m.up || m.Name == "":
		return nil, failf("MemberPromote", etcdclient.ErrLearnerNotReady)
	}
	m.IsLearner = false
	return f.list(), nil
}

// MemberRemove implements etcdclient.Client.
func (f *fakeEtcd) MemberRemove(_ context.Context, id uint64) ([]etcdclient.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("MemberRemove(" + etcdclient.FormatID(id) + ")")
	if f.leader == 0 {
		return nil, failf("MemberRemove", etcdclient.ErrNoLeader)
	}
	m := f.find(id)
	if m == nil {
		return nil, failf("MemberRemove", etcdclient.ErrMemberNotFound)
	}
	if !m.IsLearner {
		all, up := f.voters(id)
		if all == 0 || up < all/2+1 {
			return nil, failf("MemberRemove", etcdclient.ErrUnhealthyCluster)
		}
	}
	f.members = slices.DeleteFunc(f.members, func(x *fakeMember) bool { return x.ID == id })
	f.elect()
	return f.list(), nil
}

// MoveLeader implements etcdclient.Client.
func (f *fakeEtcd) MoveLeader(_ context.Context, to uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("MoveLeader(" + etcdclient.FormatID(to) + ")")
	m := f.find(to)
	if f.leader == 0 {
		return failf("MoveLeader", etcdclient.ErrNoLeader)
	}
	if m == nil || m.IsLearner || !m.up {
		return failf("MoveLeader", etcdclient.ErrBadLeaderTransferee)
	}
	f.leader = to
	return nil
}

// Status implements etcdclient.Client.
func (f *fakeEtcd) Status(_ context.Context, endpoint string) (etcdclient.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Status(" + endpoint + ")")
	for _, m := range f.members {
		if m.up && !m.mute && slices.Contains(m.ClientURLs, endpoint) {
			v := f.version
			if v == "" {
				v = fakeVersion
			}
			return etcdclient.Status{Endpoint: endpoint, ID: m.ID, Leader: f.leader, Version: v, IsLearner: m.IsLearner,
				RaftIndex: max(f.index, 10), RaftAppliedIndex: max(f.index, 10)}, nil
		}
	}
	return etcdclient.Status{}, failf("Status", etcdclient.ErrUnavailable)
}

// AlarmList implements etcdclient.Client.
func (f *fakeEtcd) AlarmList(context.Context) ([]etcdclient.Alarm, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("AlarmList")
	return slices.Clone(f.alarms), nil
}

// AlarmDisarm implements etcdclient.Client.
func (f *fakeEtcd) AlarmDisarm(_ context.Context, a etcdclient.Alarm) ([]etcdclient.Alarm, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("AlarmDisarm(" + etcdclient.FormatID(a.MemberID) + "," + string(a.Type) + ")")
	if f.leader == 0 {
		return nil, failf("AlarmDisarm", etcdclient.ErrNoLeader)
	}
	var gone []etcdclient.Alarm
	f.alarms = slices.DeleteFunc(f.alarms, func(x etcdclient.Alarm) bool {
		if x == a {
			gone = append(gone, x)
			return true
		}
		return false
	})
	return gone, nil
}

// raiseAlarm activates an alarm, as etcd's corruption check does for a diverged member.
func (f *fakeEtcd) raiseAlarm(a etcdclient.Alarm) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alarms = append(f.alarms, a)
}

// activeAlarms are the alarms not disarmed yet.
func (f *fakeEtcd) activeAlarms() []etcdclient.Alarm {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.alarms)
}

// Defragment implements etcdclient.Client.
func (f *fakeEtcd) Defragment(context.Context, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Defragment")
	return nil
}

// HashKV implements etcdclient.Client.
func (f *fakeEtcd) HashKV(context.Context, string, int64) (etcdclient.HashKV, error) {
	return etcdclient.HashKV{}, nil
}

// network maps Pod IPs to the fake cluster serving them, so that the real etcdclient.Pool can
// dial fakes through its Dialer.
type network struct {
	mu      sync.Mutex
	byIP    map[string]*fakeEtcd
	nextIP  int
	closed  int
	clients int
}

var net0 = &network{byIP: map[string]*fakeEtcd{}}

// allocate returns a fresh Pod IP served by f.
func (n *network) allocate(f *fakeEtcd) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextIP++
	ip := "10.77." + itoa(n.nextIP/250) + "." + itoa(n.nextIP%250+1)
	n.byIP[ip] = f
	return ip
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// dial is the Pool's Dialer: the fake behind the first endpoint that has one.
func (n *network) dial(_ context.Context, cfg etcdclient.Config) (etcdclient.DialedClient, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ep := range cfg.Endpoints {
		u, err := url.Parse(ep)
		if err != nil {
			continue
		}
		if f := n.byIP[u.Hostname()]; f != nil {
			n.clients++
			return &closable{fakeEtcd: f, n: n}, nil
		}
	}
	return nil, failf("dial", etcdclient.ErrUnavailable)
}

type closable struct {
	*fakeEtcd
	n *network
}

func (c *closable) Close() error {
	c.n.mu.Lock()
	c.n.closed++
	c.n.mu.Unlock()
	return nil
}

// lead makes the member with hex ID id the leader (a test's stand-in for an election).
func (f *fakeEtcd) lead(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.IDHex() == id && !m.IsLearner && m.up {
			f.leader = m.ID
		}
	}
}

// addOrphan adds a learner that no EtcdMember explains, bypassing the rules (a test's stand-in
// for an operator that crashed between an add and its patch, after which the member was lost).
func (f *fakeEtcd) addOrphan(peer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.members = append(f.members, &fakeMember{Member: etcdclient.Member{ID: f.nextID<<8 | 0x5e, PeerURLs: []string{peer}, IsLearner: true}})
	f.countLearners()
}
