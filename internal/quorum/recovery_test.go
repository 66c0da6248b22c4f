package quorum_test

import (
	"math/bits"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// TestRecoveryExhaustive checks Recovery against an independent, set-based statement of the rule
// for every voter set of 1–7 and every assignment of Answering, Lost and Down to its voters
// (3^V patterns each): recovery is automatic exactly when no voter is down, every quorum (every
// subset of at least q(V) voters) contains an answering voter, and no quorum consists of
// answering voters alone.
func TestRecoveryExhaustive(t *testing.T) {
	automatic := map[int]int{}
	for v := 1; v <= 7; v++ {
		for _, states := range patterns(v) {
			want := recoveryOracle(states)
			if got := quorum.Recovery(states); got != want {
				t.Fatalf("Recovery(%v) = %v, want %v", states, got, want)
			}
			if want == quorum.RecoverAutomatically {
				automatic[v]++
				if v%2 != 0 || count(states, quorum.Lost) != v/2 {
					t.Fatalf("automatic recovery of %v is not an even voter set that lost exactly half", states)
				}
			}
		}
	}
	// Even sets: choose which half is lost; odd sets: never.
	for v, want := range map[int]int{1: 0, 2: 2, 3: 0, 4: 6, 5: 0, 6: 20, 7: 0} {
		if automatic[v] != want {
			t.Errorf("%d voters: %d automatic patterns, want %d", v, automatic[v], want)
		}
	}
}

// TestRecoveryNamedCases are the situations the documentation names.
func TestRecoveryNamedCases(t *testing.T) {
	A, L, D := quorum.Answering, quorum.Lost, quorum.Down
	for _, tc := range []struct {
		name   string
		voters []quorum.VoterState
		want   quorum.RecoveryMode
	}{
		{"2-voter window, second voter's Memory Pod lost", []quorum.VoterState{A, L}, quorum.RecoverAutomatically},
		{"2-voter window, second voter down with its data", []quorum.VoterState{A, D}, quorum.RecoverWithApproval},
		{"4-voter window of 3→5, two lost", []quorum.VoterState{A, A, L, L}, quorum.RecoverAutomatically},
		{"4 voters, one lost one down", []quorum.VoterState{A, A, L, D}, quorum.RecoverWithApproval},
		{"2 of 3 lost", []quorum.VoterState{A, L, L}, quorum.RecoverWithApproval},
		{"3 voters, one lost", []quorum.VoterState{A, A, L}, quorum.NoRecoveryNeeded},
		{"nobody answers", []quorum.VoterState{L, D, D}, quorum.NothingToRecoverFrom},
		{"single voter answering", []quorum.VoterState{A}, quorum.NoRecoveryNeeded},
		{"no voters", nil, quorum.NothingToRecoverFrom},
	} {
		if got := quorum.Recovery(tc.voters); got != tc.want {
			t.Errorf("%s: Recovery(%v) = %v, want %v", tc.name, tc.voters, got, tc.want)
		}
	}
}

// TestMostUpToDate: the last entry decides, term before index, never a commit index; ties go to
// the first name.
func TestMostUpToDate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cs   []quorum.Candidate
		want string
	}{
		// Both survivors' commit indexes may be 41 here: b holds entry 42, which the lost
		// leader acknowledged, and a recovery from a would drop it.
		{"same term, longer log", []quorum.Candidate{{"a", quorum.LogPosition{Term: 3, Index: 41}}, {"b", quorum.LogPosition{Term: 3, Index: 42}}}, "b"},
		{"higher term beats longer log", []quorum.Candidate{{"a", quorum.LogPosition{Term: 4, Index: 40}}, {"b", quorum.LogPosition{Term: 3, Index: 50}}}, "a"},
		{"identical logs: first name", []quorum.Candidate{{"c", quorum.LogPosition{Term: 3, Index: 42}}, {"b", quorum.LogPosition{Term: 3, Index: 42}}}, "b"},
		{"one candidate", []quorum.Candidate{{"a", quorum.LogPosition{Term: 1, Index: 1}}}, "a"},
	} {
		got, ok := quorum.MostUpToDate(tc.cs)
		if !ok || got.Name != tc.want {
			t.Errorf("%s: MostUpToDate = %v, %v; want %s", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := quorum.MostUpToDate(nil); ok {
		t.Error("MostUpToDate(nil) found a candidate")
	}
}

// FuzzRecovery: any loss pattern of up to 9 voters gets the oracle's verdict, and an automatic
// verdict always leaves the answering voters holding every possible commit quorum's witness.
func FuzzRecovery(f *testing.F) {
	f.Add(uint8(2), uint16(0b10), uint16(0))
	f.Add(uint8(4), uint16(0b1100), uint16(0))
	f.Add(uint8(3), uint16(0b110), uint16(0))
	f.Add(uint8(5), uint16(0b00011), uint16(0b00100))
	f.Fuzz(func(t *testing.T, n uint8, lost, down uint16) {
		v := int(n % 10)
		states := make([]quorum.VoterState, v)
		for i := range states {
			switch {
			case lost&(1<<i) != 0:
				states[i] = quorum.Lost
			case down&(1<<i) != 0:
				states[i] = quorum.Down
			}
		}
		got := quorum.Recovery(states)
		if want := recoveryOracle(states); got != want {
			t.Fatalf("Recovery(%v) = %v, want %v", states, got, want)
		}
	})
}

// recoveryOracle states the rule over sets, not arithmetic: enumerate every subset of the voters.
func recoveryOracle(states []quorum.VoterState) quorum.RecoveryMode {
	v := len(states)
	var answering uint
	for i, s := range states {
		if s == quorum.Answering {
			answering |= 1 << i
		}
	}
	if answering == 0 {
		return quorum.NothingToRecoverFrom
	}
	q := v/2 + 1
	everyQuorumMeetsAnswering, someQuorumAllAnswering := true, false
	for set := uint(0); set < 1<<v; set++ {
		if bits.OnesCount(set) < q {
			continue
		}
		if set&answering == 0 {
			everyQuorumMeetsAnswering = false
		}
		if set&^answering == 0 {
			someQuorumAllAnswering = true
		}
	}
	switch {
	case someQuorumAllAnswering:
		return quorum.NoRecoveryNeeded
	case everyQuorumMeetsAnswering && count(states, quorum.Down) == 0:
		return quorum.RecoverAutomatically
	}
	return quorum.RecoverWithApproval
}

func patterns(v int) [][]quorum.VoterState {
	out := [][]quorum.VoterState{nil}
	for range v {
		var next [][]quorum.VoterState
		for _, p := range out {
			for _, s := range []quorum.VoterState{quorum.Answering, quorum.Lost, quorum.Down} {
				next = append(next, append(append([]quorum.VoterState(nil), p...), s))
			}
		}
		out = next
	}
	return out
}

func count(states []quorum.VoterState, want quorum.VoterState) int {
	n := 0
	for _, s := range states {
		if s == want {
			n++
		}
	}
	return n
}
