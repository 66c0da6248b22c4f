package membership

import (
	"time"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/version"
)

// VersionRecheck is how soon a wake the version check holds is looked at again: nothing that
// would lift the hold (a corrected spec adopted at the deadline, or at once with kubectl etcd
// retry) needs a faster look, and watches bring a changed spec at once anyway.
const VersionRecheck = 30 * time.Second

// VersionRejection runs the version rules (docs/design/versions.md) on target, a new
// spec.version, before the lock may adopt it, and returns the refusal's message, or "" when it
// is allowed. A spec whose version equals the latched one was checked when it was latched: an
// unrelated edit (replicas, resources) is never refused because of what runs.
//
// It reads status: the versions members last reported (Member.Version, for members down right
// now) and status.minorSince (ms), the record of when every member first ran the lowest minor,
// which nothing in this pass's observation could reconstruct.
func VersionRejection(target string, s *Scope, ms *etcdv1alpha2.MinorSince) string {
	if s.Observed != nil && target == s.Observed.Version {
		return ""
	}
	running := RunningVersions(s)
	if err := version.Check(target, running); err != nil {
		return err.Error()
	}
	low, ok := version.Lowest(running)
	if !ok {
		return ""
	}
	snapshotted := ms != nil && ms.Minor == low.MinorString() && ms.Snapshotted
	count := SnapshotCount(s.Observed)
	if err := version.CheckSnapshotted(target, low, snapshotted, MinorSnapshotWait(ms, count, low)); err != nil {
		return err.Error()
	}
	return ""
}

// RunningVersions are the versions the rules compare a target against: per member, the
// version its etcd answered with in this pass, else the version its status recorded from an
// earlier pass (a member down right now still runs, or will run again, that version), else,
// for a dormant member, its template's version. With none known (a cluster that never
// answered), the latched version stands in. Pending members run nothing yet and are left out.
func RunningVersions(s *Scope) []string {
	var out []string
	for _, m := range s.Members {
		if e, ok := s.EtcdMemberOf(m); ok && !m.Dormant {
			if st, ok := s.Etcd.Statuses[e.ID]; ok && st.Version != "" {
				out = append(out, st.Version)
				continue
			}
		}
		switch {
		case m.Version != "":
			out = append(out, m.Version)
		case m.Dormant && m.Spec != nil:
			out = append(out, m.Spec.Version)
		}
	}
	if len(out) == 0 && s.Observed != nil {
		out = append(out, s.Observed.Version)
	}
	return out
}

// wakeRejection re-checks the latched version against the version the dormant member m last
// ran before it is woken: it restarts on its old data directory, so what matters is what that
// data was last written by, whatever was latched while the cluster slept. "" allows the wake.
func wakeRejection(s *Scope, m Member) string {
	if s.Observed == nil {
		return ""
	}
	last := m.Version
	if last == "" && m.Spec != nil {
		// Never reported (woken and paused again before etcd answered): its template's version
		// is the one its Pod last ran, since only the wake itself rewrites a dormant member's
		// template.
		last = m.Spec.Version
	}
	if last == "" {
		return ""
	}
	if err := version.Check(s.Observed.Version, []string{last}); err != nil {
		return err.Error()
	}
	return ""
}

// SnapshotCount is the --snapshot-count the latched template gives members; 0 for etcd's
// default.
func SnapshotCount(o *etcdv1alpha2.ObservedClusterSpec) int64 {
	if o != nil && o.Options != nil && o.Options.SnapshotCount != nil {
		return *o.Options.SnapshotCount
	}
	return 0
}

// LowestRunning is the version status.runningVersion reports: the lowest version running
// members answered with; for a paused cluster, the dormant member's last one; "" when none is
// known.
func LowestRunning(s *Scope) string {
	var versions []string
	for _, st := range s.Etcd.Statuses {
		if st.Version != "" {
			versions = append(versions, st.Version)
		}
	}
	if len(versions) == 0 && s.Target == 0 {
		for _, m := range s.Members {
			if m.Dormant && m.Version != "" {
				versions = append(versions, m.Version)
			}
		}
	}
	low, ok := version.Lowest(versions)
	if !ok {
		return ""
	}
	return low.String()
}
