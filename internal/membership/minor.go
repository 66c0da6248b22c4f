package membership

import (
	"fmt"
	"slices"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/version"
)

// snapshotMargin is added to the snapshot interval before a member counts as snapshotted since
// a raft index: etcd checks the interval after applying a whole batch of entries, so its
// snapshots may land up to a batch later than the interval alone says.
const snapshotMargin = RollMaxLag

// MinorInput is what one pass knows about the minor every member runs.
type MinorInput struct {
	// Forming is true while this operator forms the cluster (no cluster ID latched yet): its
	// log starts on the latched version, with nothing older in it.
	Forming bool
	// Latched is status.observed.version.
	Latched string
	// Known is true when etcd's member list answered; members are its IDs.
	Known   bool
	Members []uint64
	// Statuses are this pass's Status answers, by member ID.
	Statuses map[uint64]etcdclient.Status
	// SnapshotCount is the --snapshot-count the members run with; 0 means etcd's default.
	SnapshotCount int64
}

// NextMinorSince updates status.minorSince from one pass (docs/design/versions.md; finding 9 in
// docs/e2e-lifecycle.md). It records the committed raft index at which the operator first saw
// every member on one minor, and marks it snapshotted once every member has applied more than a
// snapshot interval (plus snapshotMargin) beyond it: every member has then taken a raft snapshot
// after that index, so it replays, and as leader sends to new members, only entries written
// under that minor. A pass that did not hear from every member changes nothing. A cluster that
// already ran before this field existed, or was adopted with a history the operator cannot see,
// is recorded from the index of its first complete pass: conservative, never too early.
func NextMinorSince(prev *etcdv1alpha2.MinorSince, in MinorInput) *etcdv1alpha2.MinorSince {
	if prev == nil && in.Forming {
		if v, err := version.Parse(in.Latched); err == nil {
			return &etcdv1alpha2.MinorSince{Minor: v.MinorString(), Snapshotted: true}
		}
		return nil
	}
	if !in.Known || len(in.Members) == 0 {
		return prev
	}
	var (
		low       version.Version
		committed uint64
		applied   []uint64
	)
	for i, id := range in.Members {
		st, ok := in.Statuses[id]
		if !ok {
			return prev
		}
		v, err := version.Parse(st.Version)
		if err != nil {
			return prev
		}
		if i == 0 || v.Compare(low) < 0 {
			low = v
		}
		committed = max(committed, st.RaftIndex)
		applied = append(applied, st.RaftAppliedIndex)
	}
	if prev == nil || prev.Minor != low.MinorString() {
		return &etcdv1alpha2.MinorSince{Minor: low.MinorString(), RaftIndex: int64(committed)}
	}
	if prev.Snapshotted {
		return prev
	}
	need := uint64(prev.RaftIndex) + snapshotInterval(in.SnapshotCount, low) //nolint:gosec // G115: recorded from a uint64, never negative
	if slices.Min(applied) <= need {
		return prev
	}
	next := *prev
	next.Snapshotted = true
	return &next
}

// snapshotInterval is how many entries a member applies, at most, between two raft snapshots.
func snapshotInterval(snapshotCount int64, running version.Version) uint64 {
	if snapshotCount <= 0 {
		snapshotCount = version.DefaultSnapshotCount(running)
	}
	return uint64(snapshotCount) + snapshotMargin //nolint:gosec // G115: positive here
}

// MinorSnapshotWait says, for a refusal, what the step to the next minor waits for.
func MinorSnapshotWait(ms *etcdv1alpha2.MinorSince, snapshotCount int64, low version.Version) string {
	if ms == nil || ms.Minor != low.MinorString() {
		return fmt.Sprintf("the operator has not yet heard from every member running %s", low.MinorString())
	}
	return fmt.Sprintf("every member must apply raft index %d, %d entries beyond index %d where every member first ran %s",
		uint64(ms.RaftIndex)+snapshotInterval(snapshotCount, low)+1, snapshotInterval(snapshotCount, low)+1, ms.RaftIndex, ms.Minor) //nolint:gosec // G115: as above
}
