package quorum

import (
	"cmp"
	"slices"
)

// VoterState is what the operator knows of one voter while deciding about a lost quorum
// (docs/design/quorum-recovery.md).
type VoterState int

const (
	// Answering means the voter's etcd answers the operator, so its log can be read.
	Answering VoterState = iota
	// Lost means the voter's data provably no longer exists (a Memory member whose Pod is gone, a
	// member whose guard found its data dir emptied, an etcd member with neither EtcdMember
	// nor PVC). It can never vote again under its identity.
	Lost
	// Down means the voter does not answer, but its data may still exist: it may come back.
	Down
)

// RecoveryMode is the recovery rule's verdict over one loss pattern.
type RecoveryMode int

const (
	// NoRecoveryNeeded means the answering voters form a quorum; raft elects a leader by itself.
	NoRecoveryNeeded RecoveryMode = iota
	// RecoverAutomatically means quorum is lost, yet every quorum of the voter set meets the
	// answering voters and every voter that does not answer is lost for good. Every committed
	// entry is then in some answering voter's log, and the most up-to-date one holds them all:
	// recovery from it loses nothing, so the operator does it without asking.
	RecoverAutomatically
	// RecoverWithApproval means quorum is lost and some voter answers, but a committed entry may be
	// only on voters that do not answer, or a voter that is down may still come back and restore
	// the quorum by itself. Only a person may accept what recovery could drop.
	RecoverWithApproval
	// NothingToRecoverFrom means no voter answers.
	NothingToRecoverFrom
)

func (m RecoveryMode) String() string {
	switch m {
	case NoRecoveryNeeded:
		return "NoRecoveryNeeded"
	case RecoverAutomatically:
		return "RecoverAutomatically"
	case RecoverWithApproval:
		return "RecoverWithApproval"
	case NothingToRecoverFrom:
		return "NothingToRecoverFrom"
	}
	return "RecoveryMode(?)"
}

// Recovery decides over the states of every voter of the last voter set etcd agreed on. A
// committed entry reached q(V) voters; it is certainly held by an answering voter exactly when
// fewer than q(V) voters do not answer. Down voters make the verdict wait for a person even then:
// they may return with their data and end the outage without anything being forced.
//
// With the answering voters short of a quorum, that leaves one automatic pattern: an even voter
// set that lost exactly half of its voters for good (the 2-voter window of a bootstrap or a 1 → 3
// growth, the 4-voter window of a 3 → 5 growth).
func Recovery(voters []VoterState) RecoveryMode {
	var answering, lost, down int
	for _, v := range voters {
		switch v {
		case Answering:
			answering++
		case Lost:
			lost++
		default:
			down++
		}
	}
	q := Of(len(voters))
	switch {
	case answering >= q && len(voters) > 0:
		return NoRecoveryNeeded
	case answering == 0:
		return NothingToRecoverFrom
	case down == 0 && lost < q:
		return RecoverAutomatically
	}
	return RecoverWithApproval
}

// LogPosition is the last entry of one member's raft log: its term and index.
type LogPosition struct {
	Term, Index uint64
}

// Compare orders positions the way raft orders logs by how up to date they are: the higher
// last term first, then the higher last index. Commit and applied indexes play no part: an entry
// the old leader already acknowledged can sit beyond every survivor's commit index.
func (p LogPosition) Compare(o LogPosition) int {
	if c := cmp.Compare(p.Term, o.Term); c != 0 {
		return c
	}
	return cmp.Compare(p.Index, o.Index)
}

// Candidate is a survivor the recovery may start from.
type Candidate struct {
	// Name identifies it (the member name).
	Name string
	// Last is the last entry of its raft log.
	Last LogPosition
}

// MostUpToDate returns the candidate whose log is most up to date, ties broken by name so that
// every pass picks the same one (two logs that end in the same term and index are identical,
// by raft's log matching property). False for no candidates.
func MostUpToDate(cs []Candidate) (Candidate, bool) {
	if len(cs) == 0 {
		return Candidate{}, false
	}
	return slices.MaxFunc(cs, func(a, b Candidate) int {
		if c := a.Last.Compare(b.Last); c != 0 {
			return c
		}
		return cmp.Compare(b.Name, a.Name)
	}), true
}
