package etcdcluster

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// warning names a kind of Warning Event sent once per distinct value (a refusal's message, a
// pending generation): a new value means something changed and is announced again.
type warning string

const (
	warnSpecPending     warning = "SpecChangePending"
	warnQuorumBlocked   warning = "QuorumGateBlocked"
	warnVersionRejected warning = "VersionChangeRejected"
	warnApprovalIgnored warning = "RecoveryApprovalIgnored"
	// noteRecoveryStarted is a Normal Event kept to one per recovery the same way.
	noteRecoveryStarted   warning = "QuorumRecoveryStarted"
	noteRecoveryCompleted warning = "QuorumRecoveryCompleted"
)

// memory is what this operator process remembers of each cluster between passes: when each etcd
// member ID was first seen, and first seen started (the orphan grace and etcd's strict
// reconfiguration check are timed from them; etcd keeps no such record), when each voter last
// counted as healthy (a voter that served since its start and is down now is not starting), the last Warning of each
// kind, whether this process restarted a member of a roll that has not converged, and whether
// etcd refused a call for want of credentials. A restart or a new leader starts from nothing: the
// timers restart (which only delays an orphan's removal), a Warning may be sent once more, a roll
// in progress is reported as a scale-up until it converges, and auth on an old etcd is found
// again by the next refusal. No safety decision depends on it (docs/design/reconcile-pass.md).
type memory struct {
	mu       sync.Mutex
	clusters map[types.NamespacedName]*clusterMemory
}

type clusterMemory struct {
	firstSeen map[uint64]time.Time
	// startedSeen is nil until the process first looked at the cluster's member list.
	startedSeen map[uint64]time.Time
	// healthySeen is when each voter last counted as healthy.
	healthySeen map[uint64]time.Time
	warned      map[warning]string
	rolling     bool
	// stranded is true while the last pass found no leader: the next pass asks the members
	// about themselves first instead of waiting out a linearizable MemberList that cannot
	// answer (docs/design/quorum-recovery.md).
	stranded bool
	// authSuspected is true once etcd refused a call of a cluster whose spec asks for no auth
	// because it carried no credentials, until a probe finds auth off: each pass meanwhile asks
	// etcd whether auth is on (probeUnaskedAuth).
	authSuspected bool
}

func newMemory() *memory { return &memory{clusters: map[types.NamespacedName]*clusterMemory{}} }

// of returns key's memory, creating it; the caller holds mu.
func (m *memory) of(key types.NamespacedName) *clusterMemory {
	c := m.clusters[key]
	if c == nil {
		c = &clusterMemory{warned: map[warning]string{}}
		m.clusters[key] = c
	}
	return c
}

// seen records etcd's member list as observed at now and returns copies of when each listed
// member was first seen and first seen started. Members that left are forgotten. A member
// already started the first time this process looks gets the zero time: it was up before the
// operator was, so most likely for longer than any grace.
func (m *memory) seen(key types.NamespacedName, list []etcdclient.Member, now time.Time) (firstSeen, startedSeen map[uint64]time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.of(key)
	first := make(map[uint64]time.Time, len(list))
	started := make(map[uint64]time.Time, len(list))
	for _, e := range list {
		if t, ok := c.firstSeen[e.ID]; ok {
			first[e.ID] = t
		} else {
			first[e.ID] = now
		}
		switch t, ok := c.startedSeen[e.ID]; {
		case ok:
			started[e.ID] = t
		case !e.Started():
		case c.startedSeen != nil:
			started[e.ID] = now
		default:
			started[e.ID] = time.Time{}
		}
	}
	c.firstSeen, c.startedSeen = first, started
	return maps.Clone(first), maps.Clone(started)
}

// healthy returns copies of when each voter of list was last seen counting as healthy, from the
// earlier passes; members that left are forgotten.
func (m *memory) healthy(key types.NamespacedName, list []etcdclient.Member) map[uint64]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.of(key)
	out := make(map[uint64]time.Time, len(list))
	for _, e := range list {
		if t, ok := c.healthySeen[e.ID]; ok {
			out[e.ID] = t
		}
	}
	c.healthySeen = maps.Clone(out)
	return out
}

// sawHealthy records that the voters of s that count as healthy did so at s.Now.
func (m *memory) sawHealthy(key types.NamespacedName, s *membership.Scope) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.of(key)
	if c.healthySeen == nil {
		c.healthySeen = map[uint64]time.Time{}
	}
	for _, e := range s.Voters() {
		if s.HealthyVoter(e) {
			c.healthySeen[e.ID] = s.Now
		}
	}
}

// warnOnce reports whether a Warning of kind with value is new, and remembers it.
func (m *memory) warnOnce(key types.NamespacedName, kind warning, value string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.of(key)
	last, ok := c.warned[kind]
	c.warned[kind] = value
	return !ok || last != value
}

// wasStranded reports whether the last pass of key's cluster found no leader.
func (m *memory) wasStranded(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.of(key).stranded
}

// setStranded records whether this pass found no leader.
func (m *memory) setStranded(key types.NamespacedName, stranded bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(key).stranded = stranded
}

// rearm forgets the last Warning of kind: the same value later is a new occurrence.
func (m *memory) rearm(key types.NamespacedName, kind warning) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.of(key).warned, kind)
}

// rolling reports whether this process restarted a member of key's cluster since the cluster
// last converged.
func (m *memory) rolling(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.of(key).rolling
}

// startRoll records a roll restart and reports whether it is the roll's first.
func (m *memory) startRoll(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.of(key)
	first := !c.rolling
	c.rolling = true
	return first
}

// endRoll records convergence and reports whether a roll this process started just ended.
func (m *memory) endRoll(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.of(key)
	was := c.rolling
	c.rolling = false
	return was
}

// forget drops everything remembered of key.
func (m *memory) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.clusters, key)
}

// authSuspected reports whether etcd refused a call of key's cluster for want of credentials
// since a probe last found auth off (probeUnaskedAuth).
func (m *memory) authSuspected(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.of(key).authSuspected
}

// setAuthSuspected records a refusal for want of credentials (true), or a probe that found auth
// off (false).
func (m *memory) setAuthSuspected(key types.NamespacedName, suspected bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(key).authSuspected = suspected
}
