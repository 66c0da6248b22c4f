package etcdcluster

import (
	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/version"
)

// eventVersionChangeRejected is the Warning emitted once per distinct refusal (behaviour.md §23).
const eventVersionChangeRejected = "VersionChangeRejected"

// versionRejection runs the version check of behaviour.md §14 on spec.version before the lock
// may adopt it, and returns the refusal's message, or "" when allowed. A spec whose version
// equals the latched one was checked when it was latched: an unrelated edit (replicas,
// resources) is never refused because of what runs.
func (p *pass) versionRejection() string {
	c := p.cluster
	if c.Status.Observed != nil && c.Spec.Version == c.Status.Observed.Version {
		return ""
	}
	running := p.runningVersions()
	if err := version.Check(c.Spec.Version, running); err != nil {
		return err.Error()
	}
	low, ok := lowestVersion(running)
	if !ok {
		return ""
	}
	ms := c.Status.MinorSince
	snapshotted := ms != nil && ms.Minor == low.MinorString() && ms.Snapshotted
	count := p.snapshotCount()
	if err := version.CheckSnapshotted(c.Spec.Version, low, snapshotted, minorSnapshotWait(ms, count, low)); err != nil {
		return err.Error()
	}
	return ""
}

// lowestVersion is the lowest of versions that parse, and false when none does.
func lowestVersion(versions []string) (version.Version, bool) {
	var low version.Version
	found := false
	for _, s := range versions {
		if v, err := version.Parse(s); err == nil && (!found || v.Compare(low) < 0) {
			low, found = v, true
		}
	}
	return low, found
}

// snapshotCount is the --snapshot-count the latched template gives members; 0 for etcd's
// default.
func (p *pass) snapshotCount() int64 {
	if o := p.cluster.Status.Observed; o != nil && o.Options != nil && o.Options.SnapshotCount != nil {
		return *o.Options.SnapshotCount
	}
	return 0
}

// wakeRejection re-checks the latched version against the version the dormant member last ran
// before waking it (behaviour.md §8): the member restarts on its old data directory, so what
// matters is what that data was last written by, whatever was latched meanwhile.
func (p *pass) wakeRejection(m *etcdv1alpha2.EtcdMember) string {
	last := m.Status.Version
	if last == "" {
		// Never reported (woken and paused again before etcd answered): its template's version
		// is the one its Pod last ran, since a dormant member's template is rewritten only by
		// the wake itself.
		last = m.Spec.Version
	}
	if err := version.Check(p.cluster.Status.Observed.Version, []string{last}); err != nil {
		return err.Error()
	}
	return ""
}

// runningVersions are the versions the check compares against: per member, the version its etcd
// answered with in this pass, else the version recorded in its status by an earlier pass (a
// member down right now still runs, or will run again, that version), else, for a dormant
// member, its template's version. With none known (a cluster never answered), the latched
// version stands in. Pending members run nothing yet and are left out.
func (p *pass) runningVersions() []string {
	s := p.scope()
	var out []string
	for i := range p.members {
		m := &p.members[i]
		if e, ok := s.EtcdMemberOf(s.Members[i]); ok && !m.Spec.Dormant {
			if st, ok := p.view.Statuses[e.ID]; ok && st.Version != "" {
				out = append(out, st.Version)
				continue
			}
		}
		switch {
		case m.Status.Version != "":
			out = append(out, m.Status.Version)
		case m.Spec.Dormant:
			out = append(out, m.Spec.Version)
		}
	}
	if len(out) == 0 && p.cluster.Status.Observed != nil {
		out = append(out, p.cluster.Status.Observed.Version)
	}
	return out
}

// warnVersionRejected emits one VersionChangeRejected Warning per distinct refusal: the message
// names the target, what runs and what is allowed, so a new message means something changed.
func (p *pass) warnVersionRejected(msg string) {
	p.r.mu.Lock()
	key := p.nsName()
	first := p.r.versionWarned[key] != msg
	p.r.versionWarned[key] = msg
	p.r.mu.Unlock()
	if first {
		p.event(corev1.EventTypeWarning, eventVersionChangeRejected, msg)
	}
}

// forgetVersionRejected re-arms the Warning once a spec is adopted: the same refusal later is a
// new mistake worth announcing.
func (p *pass) forgetVersionRejected() {
	p.r.mu.Lock()
	delete(p.r.versionWarned, p.nsName())
	p.r.mu.Unlock()
}

// holdWakeForVersion refuses to wake m when the latched version may not follow the version m
// last ran: Progressing=False/VersionChangeRejected and the Warning, as for a refused spec, and
// the wake waits (re-checked at the resync and on every watch event). The way out is a spec the
// check allows, adopted at the deadline or at once with `kubectl etcd retry`.
func (p *pass) holdWakeForVersion(m *etcdv1alpha2.EtcdMember) error {
	msg := p.wakeRejection(m)
	if msg == "" {
		return nil
	}
	p.lock.Rejected = msg
	p.warnVersionRejected(msg)
	return &errWaiting{after: healthResync, msg: "not waking " + m.Name + ": " + msg}
}
