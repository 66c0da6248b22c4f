package divergence

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Outcome is what one comparison concluded.
type Outcome string

const (
	// Consistent means every voter answered at the compared revision, from the same compaction, with
	// the same hash. Only this outcome lets an unattributed CORRUPT alarm be disarmed.
	Consistent Outcome = "Consistent"
	// Diverged means a strict majority of the voters agree on one hash and the voters of Result.Named
	// answered comparably with another; those are the odd ones out.
	Diverged Outcome = "Diverged"
	// Undecided means comparable answers differ but no hash has a strict majority of the voters
	// (two voters, a tie, or too few answers): nobody can tell which side is wrong, so the
	// operator reports it and replaces nobody.
	Undecided Outcome = "Undecided"
	// Incomplete means nothing differs, but not every voter answered comparably (a member did not
	// answer, or answered from another compaction); the next comparison tells.
	Incomplete Outcome = "Incomplete"
)

// Result is one comparison of the voters' keyspace hashes at one revision.
type Result struct {
	// Outcome is what the comparison concluded; empty when no comparison ran.
	Outcome Outcome
	// Revision is the revision the hashes were taken at.
	Revision int64
	// Named are the voters whose hash differs from the majority's, sorted (Diverged only).
	Named []uint64
	// Differing are, for Undecided, the voters whose comparable answers disagree, sorted.
	Differing []uint64
	// UnderAlarm is true when the comparison ran while a CORRUPT alarm with member ID 0 was
	// active (the caller sets it): only such a Consistent result may disarm that alarm.
	UnderAlarm bool
}

// Names reports whether the result names voter id as diverged.
func (r Result) Names(id uint64) bool { return r.Outcome == Diverged && slices.Contains(r.Named, id) }

// Revision is the revision to compare at: the lowest current revision among the voters' Status
// answers. Every voter has applied it, so each can hash the keyspace exactly as it stood at that
// revision however many writes land meanwhile; a member that compacted past it answers
// ErrCompacted, which Compare counts as no answer. It reports false when there is nothing to
// compare at (no revision, or one that is not positive).
func Revision(revisions []int64) (int64, bool) {
	if len(revisions) == 0 {
		return 0, false
	}
	rev := slices.Min(revisions)
	return rev, rev > 0
}

// class is what makes two answers comparable: the revision the hash covers and the compaction
// it started from. etcd hashes the revisions between the two, so members with equal classes
// must have equal hashes, and members with different ones may differ honestly (one applied a
// compaction the other has not yet).
type class struct{ hashRevision, compactRevision int64 }

// Compare concludes over the answers of the voters (etcd member IDs) to HashKV at revision rev.
// An answer that is missing, from another member, or for another revision counts as no answer.
//
// The rule (docs/design/healing.md, "Keyspace hash comparison"): a hash is the majority's when
// more than half of all voters — not just of those that answered — gave it from one class; the
// voters of that class with another hash are named. Voters of other classes are not comparable
// and never named. The leader has no extra weight: its data diverges like any member's, and a
// named leader loses its leadership before its removal. With two voters no hash can have a
// strict majority, so a difference between them is Undecided: reported, never replaced.
func Compare(voters []uint64, rev int64, answers map[uint64]etcdclient.HashKV) Result {
	res := Result{Revision: rev}
	byClass := map[class]map[uint32][]uint64{}
	answered := 0
	for _, id := range voters {
		a, ok := answers[id]
		if !ok || a.MemberID != id || a.HashRevision != rev {
			continue
		}
		answered++
		k := class{a.HashRevision, a.CompactRevision}
		if byClass[k] == nil {
			byClass[k] = map[uint32][]uint64{}
		}
		byClass[k][a.Hash] = append(byClass[k][a.Hash], id)
	}
	if k, hash, ok := majority(byClass, len(voters)); ok {
		for h, ids := range byClass[k] {
			if h != hash {
				res.Named = append(res.Named, ids...)
			}
		}
		switch {
		case len(res.Named) > 0:
			res.Outcome = Diverged
			slices.Sort(res.Named)
		case len(byClass) == 1 && answered == len(voters):
			res.Outcome = Consistent
		default:
			res.Outcome = Incomplete
		}
		return res
	}
	for _, hashes := range byClass {
		if len(hashes) > 1 {
			for _, ids := range hashes {
				res.Differing = append(res.Differing, ids...)
			}
		}
	}
	res.Outcome = Incomplete
	if len(res.Differing) > 0 {
		res.Outcome = Undecided
		slices.Sort(res.Differing)
	}
	return res
}

// majority finds the class and hash that more than half of voters voters gave.
func majority(byClass map[class]map[uint32][]uint64, voters int) (class, uint32, bool) {
	for k, hashes := range byClass {
		for h, ids := range hashes {
			if len(ids) > voters/2 {
				return k, h, true
			}
		}
	}
	return class{}, 0, false
}

// Message says what the result means for a person, naming members through name (their
// EtcdMember's name, say); empty for Consistent, Incomplete and no comparison. Deterministic.
func (r Result) Message(name func(id uint64) string) string {
	names := func(ids []uint64) []string {
		out := make([]string, 0, len(ids))
		for _, id := range ids {
			out = append(out, name(id))
		}
		slices.SortFunc(out, cmp.Compare)
		return out
	}
	switch r.Outcome {
	case Diverged:
		return fmt.Sprintf("the keyspace hash of %s differs from the majority at revision %d", strings.Join(names(r.Named), ", "), r.Revision)
	case Undecided:
		return fmt.Sprintf("the keyspace hashes of %s differ at revision %d and no majority of voters agrees, so the operator cannot tell which is wrong and replaces none: compare the members' data (etcdctl endpoint hashkv --cluster) and annotate the wrong one with replace",
			strings.Join(names(r.Differing), ", "), r.Revision)
	}
	return ""
}
