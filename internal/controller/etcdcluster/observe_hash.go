package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcd-operator/etcd-operator/internal/divergence"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Event reasons of the keyspace hash comparison (docs/design/conditions-and-events.md).
const (
	// eventKeyspaceDiverged: the comparison named members whose hash differs from the majority.
	eventKeyspaceDiverged = "KeyspaceDiverged"
	// eventKeyspaceHashMismatch: hashes differ but no majority agrees; a person must decide.
	eventKeyspaceHashMismatch = "KeyspaceHashMismatch"
)

// WithHashCheckInterval replaces divergence.Interval, how often a healthy cluster's keyspace
// hashes are compared (tests; production keeps the constant).
func WithHashCheckInterval(d time.Duration) Option {
	return func(r *Reconciler) { r.hashes.interval = d }
}

// hashChecks is what this process remembers of each cluster's keyspace hash comparisons
// (docs/design/healing.md, "Keyspace hash comparison"): when the last ran, what it found, and
// what was last announced. Like memory, it is lost on restart; the first pass of a new process
// compares again, so the verdict it carries is known again within one pass.
type hashChecks struct {
	mu        sync.Mutex
	interval  time.Duration
	byCluster map[types.NamespacedName]hashCheck
}

type hashCheck struct {
	schedule  divergence.Schedule
	result    divergence.Result
	announced string
}

func newHashChecks() *hashChecks {
	return &hashChecks{byCluster: map[types.NamespacedName]hashCheck{}}
}

// get returns what is remembered of key.
func (h *hashChecks) get(key types.NamespacedName) hashCheck {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byCluster[key]
}

// record remembers a comparison made at now and reports whether its finding (outcome and
// members, not the revision) is new, to be announced.
func (h *hashChecks) record(key types.NamespacedName, now time.Time, res divergence.Result) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.byCluster[key]
	c.schedule = divergence.Schedule{Last: now, UnderAlarm: res.UnderAlarm}
	c.result = res
	finding := fmt.Sprint(res.Outcome, res.Named, res.Differing)
	isNew := finding != c.announced
	c.announced = finding
	h.byCluster[key] = c
	return isNew
}

// forget drops everything remembered of key.
func (h *hashChecks) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byCluster, key)
}

// observeHashes compares the voters' keyspace hashes when one is due (divergence.Due: every few
// minutes, and at once when a CORRUPT alarm with member ID 0 appears) and puts the latest
// result into the etcd view. HashKV is a read: an idle cluster still makes no etcd mutation.
// The comparison runs inside the pass; each HashKV has the adapter's timeout, and only members
// that answered Status this pass are asked.
func (r *Reconciler) observeHashes(ctx context.Context, o *observation) {
	if !o.etcd.Known || o.etcdClient == nil {
		return
	}
	key := o.key()
	voters, endpoints, revisions := hashTargets(o.etcd.Members, o.etcd.Statuses)
	alarm := slices.Contains(o.etcd.Alarms, etcdclient.Alarm{MemberID: 0, Type: etcdclient.AlarmCorrupt})
	in := divergence.Input{Now: o.now, Voters: len(voters), AllAnswered: len(revisions) == len(voters), Alarm: alarm, Interval: r.hashes.interval}
	if rev, ok := divergence.Revision(revisions); ok && divergence.Due(r.hashes.get(key).schedule, in) {
		start := time.Now()
		res := divergence.Compare(voters, rev, hashes(ctx, o.etcdClient, endpoints, rev))
		res.UnderAlarm = alarm
		logf.FromContext(ctx).V(1).Info("Compared keyspace hashes", "revision", rev, "outcome", res.Outcome, "took", time.Since(start))
		if r.hashes.record(key, o.now, res) {
			r.announceHashes(o, res)
		}
	}
	o.etcd.Hash = r.hashes.get(key).result
}

// hashTargets are the started voters (sorted IDs), the endpoints they answered Status from, and
// their current revisions. Learners are not compared: they are still catching up.
func hashTargets(members []etcdclient.Member, statuses map[uint64]etcdclient.Status) (voters []uint64, endpoints map[uint64]string, revisions []int64) {
	endpoints = map[uint64]string{}
	for _, e := range members {
		if e.IsLearner {
			continue
		}
		voters = append(voters, e.ID)
		if st, ok := statuses[e.ID]; ok && e.Started() {
			endpoints[e.ID] = st.Endpoint
			revisions = append(revisions, st.Revision)
		}
	}
	slices.Sort(voters)
	return voters, endpoints, revisions
}

// hashes asks every endpoint for its HashKV at rev in parallel; a member that fails (ErrCompacted,
// a timeout) has no entry, which the comparison counts as no answer.
func hashes(ctx context.Context, cli etcdAPI, endpoints map[uint64]string, rev int64) map[uint64]etcdclient.HashKV {
	out := map[uint64]etcdclient.HashKV{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, ep := range endpoints {
		wg.Go(func() {
			h, err := cli.HashKV(ctx, ep, rev)
			if err != nil {
				logf.FromContext(ctx).V(1).Info("HashKV failed", "memberID", etcdclient.FormatID(id), "reason", err.Error())
				return
			}
			mu.Lock()
			out[id] = h
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// announceHashes sends one Warning for a new finding that needs attention: members named (they
// are replaced next) or a difference nobody can attribute (a person must decide).
func (r *Reconciler) announceHashes(o *observation, res divergence.Result) {
	if r.recorder == nil {
		return
	}
	reason := eventKeyspaceDiverged
	switch res.Outcome {
	case divergence.Diverged:
		// The replacement that follows has its own Events.
	case divergence.Undecided:
		reason = eventKeyspaceHashMismatch
	default:
		return
	}
	name := func(id uint64) string {
		for _, e := range o.etcd.Members {
			if e.ID == id && e.Name != "" {
				return e.Name + " (" + e.IDHex() + ")"
			}
		}
		return etcdclient.FormatID(id)
	}
	msg := res.Message(name)
	if res.Outcome == divergence.Diverged {
		msg += "; replacing it through the quorum gate"
	}
	r.recorder.Eventf(o.cluster, nil, corev1.EventTypeWarning, reason, reason, "%s", strings.TrimSpace(msg))
}
