package quorum_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// FuzzCheck builds arbitrary views and actions (up to 9 voters with mixed health, up to 3
// learners, unknown kinds and names, duplicate names) and asserts the gate's invariants: it never
// panics, and it never allows an action that leaves the healthy voters below the quorum of the
// membership it produces.
func FuzzCheck(f *testing.F) {
	f.Add(uint8(3), uint8(0b111), uint8(0), uint8(0), uint8(0), uint8(0), uint8(quorum.KindRemove), uint8(1), "")
	f.Add(uint8(3), uint8(0b011), uint8(0), uint8(0b100), uint8(0), uint8(0), uint8(quorum.KindDisrupt), uint8(0), "")
	f.Add(uint8(1), uint8(1), uint8(0), uint8(0), uint8(1), uint8(1), uint8(quorum.KindPromote), uint8(1), "")
	f.Add(uint8(5), uint8(0b00111), uint8(0b00100), uint8(0), uint8(0), uint8(0), uint8(quorum.KindMoveLeader), uint8(2), "")
	f.Add(uint8(2), uint8(1), uint8(0), uint8(0), uint8(0), uint8(0), uint8(quorum.KindAddLearner), uint8(0), "")
	f.Add(uint8(4), uint8(0xff), uint8(0), uint8(0), uint8(2), uint8(0xff), uint8(quorum.KindAddLearner|0x80), uint8(0), "")
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(7), uint8(255), "m0")
	f.Fuzz(func(t *testing.T, nVoters, healthy, promoted, unknown, nLearners, learnerFlags, kindByte, targetIdx uint8, name string) {
		var vw quorum.View
		for i := range int(nVoters % 10) {
			v := quorum.Voter{Name: fmt.Sprintf("m%d", i), Health: quorum.Unhealthy, JustPromoted: bit(promoted, i)}
			switch {
			case bit(healthy, i):
				v.Health = quorum.Healthy
			case bit(unknown, i):
				v.Health = quorum.HealthUnknown
			}
			vw.Voters = append(vw.Voters, v)
		}
		for j := range int(nLearners % 4) {
			vw.Learners = append(vw.Learners, quorum.Learner{
				Name:    fmt.Sprintf("l%d", j),
				Started: bit(learnerFlags, j),
				Sync:    quorum.Sync((int(learnerFlags>>4) + j) % 3),
			})
		}
		if kindByte&0x80 != 0 && len(vw.Voters) > 0 && len(vw.Learners) > 0 {
			vw.Learners[0].Name = vw.Voters[0].Name // an inconsistent view
		}
		action := quorum.Action{Kind: quorum.Kind(kindByte & 0x7)}
		members := len(vw.Voters) + len(vw.Learners)
		switch {
		case targetIdx == 255:
			action.Member = name
		case members > 0 && int(targetIdx)%(members+1) < members:
			i := int(targetIdx) % (members + 1)
			if i < len(vw.Voters) {
				action.Member = vw.Voters[i].Name
			} else {
				action.Member = vw.Learners[i-len(vw.Voters)].Name
			}
		default:
			action.Member = "nobody"
		}

		d := quorum.Check(vw, action)
		assertInvariants(t, vw, action, d)
		if again := quorum.Check(vw, action); again != d {
			t.Fatalf("not deterministic: %+v then %+v", d, again)
		}
	})
}

func bit(b uint8, i int) bool { return i < 8 && b&(1<<i) != 0 }

func assertInvariants(t *testing.T, vw quorum.View, action quorum.Action, d quorum.Decision) {
	t.Helper()
	if d.Allowed != (d.Reason == quorum.ReasonNone) {
		t.Fatalf("allowed=%v with reason %q", d.Allowed, d.Reason)
	}
	if d.Message == "" {
		t.Fatalf("empty message")
	}
	if errors.Is(d.Err(), quorum.ErrRefused) == d.Allowed {
		t.Fatalf("Err() = %v for allowed=%v", d.Err(), d.Allowed)
	}
	V := len(vw.Voters)
	if d.Disruptive && (!d.Allowed || action.Kind != quorum.KindDisrupt || V != 1) {
		t.Fatalf("disruptive %+v for %v over V=%d", d, action, V)
	}
	if d.Allowed {
		assertAllowedIsSafe(t, vw, action, d)
	}
}

// findTarget finds the action's member among voters and learners.
func findTarget(vw quorum.View, name string) (voter *quorum.Voter, learner *quorum.Learner) {
	for i := range vw.Voters {
		if vw.Voters[i].Name == name {
			voter = &vw.Voters[i]
		}
	}
	for i := range vw.Learners {
		if vw.Learners[i].Name == name {
			learner = &vw.Learners[i]
		}
	}
	return voter, learner
}

// assertAllowedIsSafe checks an allowed decision against the projected membership.
func assertAllowedIsSafe(t *testing.T, vw quorum.View, action quorum.Action, d quorum.Decision) {
	t.Helper()
	V, H, L := len(vw.Voters), vw.HealthyVoters(), len(vw.Learners)
	voter, learner := findTarget(vw, action.Member)
	if voter != nil && learner != nil {
		t.Fatalf("allowed %v over a view naming %s twice", action, action.Member)
	}
	if action.Kind != quorum.KindAddLearner && voter == nil && learner == nil {
		t.Fatalf("allowed %v naming no member", action)
	}
	h := 0
	if voter != nil && voter.CountsHealthy() {
		h = 1
	}
	q := quorum.Of
	// A membership change or a leadership move is impossible without a committing quorum.
	if action.Kind != quorum.KindDisrupt && H < q(V) {
		t.Fatalf("allowed %v with H=%d < q(%d)", action, H, V)
	}
	var safe bool
	switch action.Kind {
	case quorum.KindAddLearner:
		safe = L == 0
	case quorum.KindPromote:
		safe = learner != nil && learner.Started && learner.Sync != quorum.NotInSync && H+1 >= q(V+1)
	case quorum.KindRemove:
		safe = voter == nil || (V-1 >= 1 && H-h >= q(V-1))
	case quorum.KindDisrupt:
		safe = d.Disruptive || H-h >= q(V)
	case quorum.KindMoveLeader:
		safe = voter != nil && h == 1
	}
	if !safe {
		t.Fatalf("allowed unsafe %v over V=%d H=%d L=%d ([m healthy]=%d): %+v", action, V, H, L, h, d)
	}
}
