package etcdcluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

var testKey = types.NamespacedName{Namespace: "ns", Name: "c"}

func TestMemorySeenKeepsFirstTimeAndForgets(t *testing.T) {
	t.Parallel()
	m := newMemory()
	t0 := time.Unix(0, 0)
	m.seen(testKey, []etcdclient.Member{{ID: 1}, {ID: 2}}, t0)
	got, _ := m.seen(testKey, []etcdclient.Member{{ID: 2}, {ID: 3}}, t0.Add(time.Minute))
	if !got[2].Equal(t0) || !got[3].Equal(t0.Add(time.Minute)) || len(got) != 2 {
		t.Errorf("firstSeen = %v", got)
	}
}

func TestMemoryStartedZeroOnFirstLookThenFirstStartedTime(t *testing.T) {
	t.Parallel()
	m := newMemory()
	t0 := time.Unix(0, 0)
	started := func(id uint64) etcdclient.Member { return etcdclient.Member{ID: id, Name: "m"} }
	unstarted := func(id uint64) etcdclient.Member { return etcdclient.Member{ID: id} }
	_, first := m.seen(testKey, []etcdclient.Member{started(1), unstarted(2)}, t0)
	if at, ok := first[1]; !ok || !at.IsZero() || len(first) != 1 {
		t.Fatalf("first look = %v, want member 1 at the zero time and nothing for unstarted 2", first)
	}
	later := t0.Add(3 * time.Second)
	_, got := m.seen(testKey, []etcdclient.Member{started(1), started(2)}, later)
	if !got[1].IsZero() || !got[2].Equal(later) {
		t.Errorf("second look = %v, want 1 unchanged and 2 at %v", got, later)
	}
	_, got = m.seen(testKey, []etcdclient.Member{started(2)}, later.Add(time.Second))
	if _, ok := got[1]; ok || !got[2].Equal(later) {
		t.Errorf("after 1 left = %v", got)
	}
}

// TestMemoryStartedAfterAnEmptyFirstLook: a cluster whose first look listed no started member
// has been looked at all the same; a member that starts later is timed from then.
func TestMemoryStartedAfterAnEmptyFirstLook(t *testing.T) {
	t.Parallel()
	m := newMemory()
	t0 := time.Unix(0, 0)
	m.seen(testKey, []etcdclient.Member{{ID: 1}}, t0)
	_, got := m.seen(testKey, []etcdclient.Member{{ID: 1, Name: "a"}}, t0.Add(time.Second))
	if !got[1].Equal(t0.Add(time.Second)) {
		t.Errorf("started = %v, want the time it was first seen started", got[1])
	}
}

func TestMemoryWarnsOncePerValue(t *testing.T) {
	t.Parallel()
	m := newMemory()
	if !m.warnOnce(testKey, warnQuorumBlocked, "a") || m.warnOnce(testKey, warnQuorumBlocked, "a") {
		t.Error("the same value warned twice, or the first not at all")
	}
	if !m.warnOnce(testKey, warnQuorumBlocked, "b") {
		t.Error("a new value is not warned")
	}
	if !m.warnOnce(testKey, warnVersionRejected, "b") {
		t.Error("kinds share their last value")
	}
	m.rearm(testKey, warnQuorumBlocked)
	if !m.warnOnce(testKey, warnQuorumBlocked, "b") {
		t.Error("a re-armed warning is not sent again")
	}
	m.forget(testKey)
	if !m.warnOnce(testKey, warnVersionRejected, "b") {
		t.Error("a forgotten cluster remembers its warnings")
	}
}

func TestMemoryRoll(t *testing.T) {
	t.Parallel()
	m := newMemory()
	if m.rolling(testKey) || m.endRoll(testKey) {
		t.Fatal("a roll nobody started")
	}
	if !m.startRoll(testKey) || m.startRoll(testKey) || !m.rolling(testKey) {
		t.Fatal("startRoll reports the first restart only, and rolling follows")
	}
	if !m.endRoll(testKey) || m.rolling(testKey) || m.endRoll(testKey) {
		t.Error("endRoll reports the end once")
	}
}
