package quorum_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

func TestOf(t *testing.T) {
	t.Parallel()
	want := map[int]int{-1: 1, 0: 1, 1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4}
	for n, q := range want {
		if got := quorum.Of(n); got != q {
			t.Errorf("Of(%d) = %d, want %d", n, got, q)
		}
	}
}

func TestObservationHealth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		obs  quorum.Observation
		want quorum.Health
	}{
		{quorum.Observation{}, quorum.HealthUnknown},
		{quorum.Observation{PodReady: true}, quorum.HealthUnknown},
		{quorum.Observation{StatusAnswered: true}, quorum.Unhealthy},
		{quorum.Observation{StatusAnswered: true, PodReady: true, CorruptAlarm: true}, quorum.Unhealthy},
		{quorum.Observation{StatusAnswered: true, PodReady: true}, quorum.Healthy},
	}
	for _, tt := range tests {
		if got := tt.obs.Health(); got != tt.want {
			t.Errorf("%+v.Health() = %v, want %v", tt.obs, got, tt.want)
		}
	}
}

func TestVoterCountsHealthy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    quorum.Voter
		want bool
	}{
		{quorum.Voter{Health: quorum.Healthy}, true},
		{quorum.Voter{Health: quorum.HealthUnknown}, false},
		{quorum.Voter{Health: quorum.Unhealthy}, false},
		// Just promoted: its healthy Status was observed while it was a learner.
		{quorum.Voter{Health: quorum.Healthy, JustPromoted: true}, false},
	}
	for _, tt := range tests {
		if got := tt.v.CountsHealthy(); got != tt.want {
			t.Errorf("%+v.CountsHealthy() = %v, want %v", tt.v, got, tt.want)
		}
	}
}

// view builds V voters named v0..v(V-1), of which the first `unhealthy` do not count as
// healthy, plus an optional learner l0.
func view(voters, unhealthy int, cause unhealthyCause, learner *quorum.Learner) quorum.View {
	var vw quorum.View
	for i := range voters {
		v := quorum.Voter{Name: fmt.Sprintf("v%d", i), Health: quorum.Healthy}
		if i < unhealthy {
			switch cause {
			case causeUnhealthy:
				v.Health = quorum.Unhealthy
			case causeUnknown:
				v.Health = quorum.HealthUnknown
			case causeJustPromoted:
				v.JustPromoted = true
			}
		}
		vw.Voters = append(vw.Voters, v)
	}
	if learner != nil {
		vw.Learners = append(vw.Learners, *learner)
	}
	return vw
}

// unhealthyCause is how an unhealthy voter is unhealthy: every cause must count the same.
type unhealthyCause int

const (
	causeUnhealthy unhealthyCause = iota
	causeUnknown
	causeJustPromoted
)

func (c unhealthyCause) String() string {
	return [...]string{"unhealthy", "unknown", "just-promoted"}[c]
}

// target is which member an action names.
type target int

const (
	targetNone target = iota // AddLearner
	targetHealthyVoter
	targetUnhealthyVoter
	targetLearner
	targetUnknown
)

func (t target) String() string {
	return [...]string{"-", "healthy voter", "unhealthy voter", "learner", "unknown member"}[t]
}

// oracle is the expected decision, written from the rules of docs/design/quorum.md independently of
// the implementation: counts only, its own majority function, no shared helpers.
func oracle(voters, unhealthy int, learner *quorum.Learner, kind quorum.Kind, tgt target) (allowed, disruptive bool, reason quorum.Reason) {
	majority := func(n int) int { // the smallest k with 2k > n
		k := 0
		for 2*k <= n {
			k++
		}
		return k
	}
	V, H := voters, voters-unhealthy
	L := 0
	if learner != nil {
		L = 1
	}
	h := 0 // [m healthy]
	if tgt == targetHealthyVoter {
		h = 1
	}
	commit := H >= majority(V)
	ok := func(b bool, r quorum.Reason) (bool, bool, quorum.Reason) {
		if b {
			return true, false, quorum.ReasonNone
		}
		return false, false, r
	}
	if tgt == targetUnknown {
		return false, false, quorum.ReasonUnknownMember
	}
	switch kind {
	case quorum.KindAddLearner:
		if !commit {
			return false, false, quorum.ReasonNoQuorum
		}
		return ok(L == 0, quorum.ReasonLearnerExists)
	case quorum.KindPromote:
		switch {
		case tgt != targetLearner:
			return false, false, quorum.ReasonNotALearner
		case !commit:
			return false, false, quorum.ReasonNoQuorum
		case !learner.Started:
			return false, false, quorum.ReasonLearnerNotStarted
		case learner.Sync == quorum.NotInSync:
			return false, false, quorum.ReasonLearnerNotInSync
		}
		return ok(H+1 >= majority(V+1), quorum.ReasonWouldLoseQuorum)
	case quorum.KindRemove:
		switch {
		case !commit:
			return false, false, quorum.ReasonNoQuorum
		case tgt == targetLearner:
			return true, false, quorum.ReasonNone
		case V-1 < 1:
			return false, false, quorum.ReasonLastVoter
		}
		return ok(H-h >= majority(V-1), quorum.ReasonWouldLoseQuorum)
	case quorum.KindDisrupt:
		if tgt != targetLearner && V == 1 {
			return true, true, quorum.ReasonNone
		}
		return ok(H-h >= majority(V), quorum.ReasonWouldLoseQuorum)
	case quorum.KindMoveLeader:
		if !commit {
			return false, false, quorum.ReasonNoQuorum
		}
		return ok(tgt == targetHealthyVoter, quorum.ReasonNotAHealthyVoter)
	}
	panic("unreachable")
}

// TestCheckExhaustive enumerates sizes 1–7 × unhealthy 0..V (by each cause of unhealthiness) ×
// no learner or one learner in each started/sync state × every action × every kind of target,
// and compares every decision with the oracle.
func TestCheckExhaustive(t *testing.T) {
	t.Parallel()
	learners := []*quorum.Learner{nil}
	for _, started := range []bool{false, true} {
		for _, sync := range []quorum.Sync{quorum.SyncUnknown, quorum.InSync, quorum.NotInSync} {
			learners = append(learners, &quorum.Learner{Name: "l0", Started: started, Sync: sync})
		}
	}
	kinds := []quorum.Kind{quorum.KindAddLearner, quorum.KindPromote, quorum.KindRemove, quorum.KindDisrupt, quorum.KindMoveLeader}
	cases := 0
	for voters := 1; voters <= 7; voters++ {
		for unhealthy := 0; unhealthy <= voters; unhealthy++ {
			causes := []unhealthyCause{causeUnhealthy, causeUnknown, causeJustPromoted}
			if unhealthy == 0 {
				causes = causes[:1]
			}
			for _, cause := range causes {
				for _, learner := range learners {
					vw := view(voters, unhealthy, cause, learner)
					for _, kind := range kinds {
						for _, tgt := range targetsFor(kind, voters, unhealthy, learner != nil) {
							cases++
							checkOne(t, vw, voters, unhealthy, cause, learner, kind, tgt)
						}
					}
				}
			}
		}
	}
	t.Logf("enumerated %d cases", cases)
	// Guard against the enumeration silently shrinking.
	if cases < 5000 {
		t.Fatalf("enumerated only %d cases", cases)
	}
}

func targetsFor(kind quorum.Kind, voters, unhealthy int, hasLearner bool) []target {
	if kind == quorum.KindAddLearner {
		return []target{targetNone}
	}
	ts := []target{targetUnknown}
	if unhealthy < voters {
		ts = append(ts, targetHealthyVoter)
	}
	if unhealthy > 0 {
		ts = append(ts, targetUnhealthyVoter)
	}
	if hasLearner {
		ts = append(ts, targetLearner)
	}
	return ts
}

func checkOne(t *testing.T, vw quorum.View, voters, unhealthy int, cause unhealthyCause, learner *quorum.Learner, kind quorum.Kind, tgt target) {
	t.Helper()
	var name string
	switch tgt {
	case targetHealthyVoter:
		name = vw.Voters[unhealthy].Name // the first healthy one
	case targetUnhealthyVoter:
		name = vw.Voters[0].Name
	case targetLearner:
		name = learner.Name
	case targetUnknown:
		name = "nobody"
	}
	action := quorum.Action{Kind: kind, Member: name}
	got := quorum.Check(vw, action)
	wantAllowed, wantDisruptive, wantReason := oracle(voters, unhealthy, learner, kind, tgt)
	learnerDesc := "none"
	if learner != nil {
		learnerDesc = fmt.Sprintf("%+v", *learner)
	}
	where := fmt.Sprintf("V=%d unhealthy=%d (%v) learner=%s %v(%v %s)", voters, unhealthy, cause, learnerDesc, kind, tgt, name)
	if got.Allowed != wantAllowed || got.Disruptive != wantDisruptive || got.Reason != wantReason {
		t.Errorf("%s: got allowed=%v disruptive=%v reason=%q (%s); oracle allowed=%v disruptive=%v reason=%q",
			where, got.Allowed, got.Disruptive, got.Reason, got.Message, wantAllowed, wantDisruptive, wantReason)
	}
	wantL := 0
	if learner != nil {
		wantL = 1
	}
	if got.Voters != voters || got.Healthy != voters-unhealthy || got.Learners != wantL {
		t.Errorf("%s: counts V=%d H=%d L=%d", where, got.Voters, got.Healthy, got.Learners)
	}
	if got.Message == "" || (name != "" && !strings.Contains(got.Message, name)) {
		t.Errorf("%s: message %q does not name the target", where, got.Message)
	}
	if again := quorum.Check(vw, action); again != got {
		t.Errorf("%s: not deterministic: %+v then %+v", where, got, again)
	}
	if err := got.Err(); errors.Is(err, quorum.ErrRefused) == got.Allowed {
		t.Errorf("%s: Err() = %v for allowed=%v", where, err, got.Allowed)
	}
}

// TestCheckSpecExamples are the example rows of docs/design/quorum.md, with the messages operators
// will read in conditions and Events.
func TestCheckSpecExamples(t *testing.T) {
	t.Parallel()
	healthy := func(names ...string) []quorum.Voter {
		vs := make([]quorum.Voter, 0, len(names))
		for _, n := range names {
			vs = append(vs, quorum.Voter{Name: n, Health: quorum.Healthy})
		}
		return vs
	}
	down := func(v []quorum.Voter, names ...string) []quorum.Voter {
		for i := range v {
			for _, n := range names {
				if v[i].Name == n {
					v[i].Health = quorum.Unhealthy
				}
			}
		}
		return v
	}
	tests := []struct {
		name   string
		view   quorum.View
		action quorum.Action
		want   quorum.Decision
	}{
		{
			name:   "3/3 remove any: allowed (2 ≥ 2)",
			view:   quorum.View{Voters: healthy("etcd-a", "etcd-b", "etcd-c")},
			action: quorum.Remove("etcd-b"),
			want: quorum.Decision{Allowed: true, Voters: 3, Healthy: 3,
				Message: "removing etcd-b leaves 2 healthy voters of 2; quorum needs 2"},
		},
		{
			name:   "3/2 remove the unhealthy one: allowed (2 ≥ 2)",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-b", "etcd-c"), "etcd-c")},
			action: quorum.Remove("etcd-c"),
			want: quorum.Decision{Allowed: true, Voters: 3, Healthy: 2,
				Message: "removing etcd-c leaves 2 healthy voters of 2; quorum needs 2"},
		},
		{
			name:   "3/2 remove a healthy one: refused (1 < 2)",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-abc12", "etcd-c"), "etcd-c")},
			action: quorum.Remove("etcd-abc12"),
			want: quorum.Decision{Reason: quorum.ReasonWouldLoseQuorum, Voters: 3, Healthy: 2,
				Message: "removing etcd-abc12 would leave 1 healthy voter of 2; quorum needs 2"},
		},
		{
			name:   "3/2 restart a healthy one: refused (1 < 2)",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-b", "etcd-c"), "etcd-c")},
			action: quorum.Disrupt("etcd-a"),
			want: quorum.Decision{Reason: quorum.ReasonWouldLoseQuorum, Voters: 3, Healthy: 2,
				Message: "disrupting etcd-a would leave 1 healthy voter of 3; quorum needs 2"},
		},
		{
			name:   "2/1 add a learner: refused, no quorum",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-b"), "etcd-b")},
			action: quorum.AddLearner(),
			want: quorum.Decision{Reason: quorum.ReasonNoQuorum, Voters: 2, Healthy: 1,
				Message: "adding a learner needs quorum to commit, but only 1 healthy voter of 2; quorum needs 2"},
		},
		{
			name:   "2/1 remove the unhealthy one: refused, no quorum",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-b"), "etcd-b")},
			action: quorum.Remove("etcd-b"),
			want: quorum.Decision{Reason: quorum.ReasonNoQuorum, Voters: 2, Healthy: 1,
				Message: "removing etcd-b needs quorum to commit, but only 1 healthy voter of 2; quorum needs 2"},
		},
		{
			name:   "2/1 promote: refused, no quorum",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-b"), "etcd-b"), Learners: []quorum.Learner{{Name: "etcd-c", Started: true}}},
			action: quorum.Promote("etcd-c"),
			want: quorum.Decision{Reason: quorum.ReasonNoQuorum, Voters: 2, Healthy: 1, Learners: 1,
				Message: "promoting etcd-c needs quorum to commit, but only 1 healthy voter of 2; quorum needs 2"},
		},
		{
			name:   "2/1 restart the unhealthy one: refused",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-b"), "etcd-b")},
			action: quorum.Disrupt("etcd-b"),
			want: quorum.Decision{Reason: quorum.ReasonWouldLoseQuorum, Voters: 2, Healthy: 1,
				Message: "disrupting etcd-b would leave 1 healthy voter of 2; quorum needs 2"},
		},
		{
			name:   "2/1 move leadership: refused, no quorum",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-b"), "etcd-b")},
			action: quorum.MoveLeader("etcd-a"),
			want: quorum.Decision{Reason: quorum.ReasonNoQuorum, Voters: 2, Healthy: 1,
				Message: "moving leadership to etcd-a needs quorum to commit, but only 1 healthy voter of 2; quorum needs 2"},
		},
		{
			name:   "4/3 remove the unhealthy one: allowed (3 ≥ 2)",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-b", "etcd-c", "etcd-d"), "etcd-d")},
			action: quorum.Remove("etcd-d"),
			want: quorum.Decision{Allowed: true, Voters: 4, Healthy: 3,
				Message: "removing etcd-d leaves 3 healthy voters of 3; quorum needs 2"},
		},
		{
			name:   "5/3 restart a healthy one: refused (2 < 3)",
			view:   quorum.View{Voters: down(healthy("etcd-a", "etcd-b", "etcd-c", "etcd-d", "etcd-e"), "etcd-d", "etcd-e")},
			action: quorum.Disrupt("etcd-a"),
			want: quorum.Decision{Reason: quorum.ReasonWouldLoseQuorum, Voters: 5, Healthy: 3,
				Message: "disrupting etcd-a would leave 2 healthy voters of 5; quorum needs 3"},
		},
		{
			name:   "1/1 restart: allowed, disruptive",
			view:   quorum.View{Voters: healthy("etcd-a")},
			action: quorum.Disrupt("etcd-a"),
			want: quorum.Decision{Allowed: true, Disruptive: true, Voters: 1, Healthy: 1,
				Message: "disrupting etcd-a takes down the only voter: the cluster is unavailable until it returns"},
		},
		{
			name:   "a second learner is refused",
			view:   quorum.View{Voters: healthy("etcd-a", "etcd-b", "etcd-c"), Learners: []quorum.Learner{{Name: "etcd-d"}}},
			action: quorum.AddLearner(),
			want: quorum.Decision{Reason: quorum.ReasonLearnerExists, Voters: 3, Healthy: 3, Learners: 1,
				Message: "adding a learner must wait for learner etcd-d; etcd admits one learner at a time"},
		},
		{
			name:   "a learner that has not started waits",
			view:   quorum.View{Voters: healthy("etcd-a"), Learners: []quorum.Learner{{Name: "etcd-b"}}},
			action: quorum.Promote("etcd-b"),
			want: quorum.Decision{Reason: quorum.ReasonLearnerNotStarted, Voters: 1, Healthy: 1, Learners: 1,
				Message: "promoting etcd-b must wait: learner etcd-b has not started"},
		},
		{
			name:   "a started learner is promoted (1 → 2 voters)",
			view:   quorum.View{Voters: healthy("etcd-a"), Learners: []quorum.Learner{{Name: "etcd-b", Started: true}}},
			action: quorum.Promote("etcd-b"),
			want: quorum.Decision{Allowed: true, Voters: 1, Healthy: 1, Learners: 1,
				Message: "promoting etcd-b leaves 2 healthy voters of 2; quorum needs 2"},
		},
		{
			name:   "a just-promoted voter cannot take the leadership",
			view:   quorum.View{Voters: []quorum.Voter{{Name: "etcd-a", Health: quorum.Healthy}, {Name: "etcd-b", Health: quorum.Healthy}, {Name: "etcd-c", Health: quorum.Healthy, JustPromoted: true}}},
			action: quorum.MoveLeader("etcd-c"),
			want: quorum.Decision{Reason: quorum.ReasonNotAHealthyVoter, Voters: 3, Healthy: 2,
				Message: "leadership cannot move to etcd-c: it is just promoted and not yet seen healthy as a voter"},
		},
		{
			name:   "the last voter is never removed",
			view:   quorum.View{Voters: healthy("etcd-a")},
			action: quorum.Remove("etcd-a"),
			want: quorum.Decision{Reason: quorum.ReasonLastVoter, Voters: 1, Healthy: 1,
				Message: "removing etcd-a would leave no voter; it is the only one"},
		},
		{
			name:   "a view naming a member twice is refused",
			view:   quorum.View{Voters: healthy("etcd-a", "etcd-b", "etcd-c"), Learners: []quorum.Learner{{Name: "etcd-a"}}},
			action: quorum.Remove("etcd-b"),
			want: quorum.Decision{Reason: quorum.ReasonInvalid, Voters: 3, Healthy: 3, Learners: 1,
				Message: "the membership view names etcd-a twice"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := quorum.Check(tt.view, tt.action)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefusedError(t *testing.T) {
	t.Parallel()
	d := quorum.Check(quorum.View{Voters: []quorum.Voter{{Name: "etcd-a"}}}, quorum.AddLearner())
	err := d.Err()
	if !errors.Is(err, quorum.ErrRefused) {
		t.Fatalf("Err() = %v, want ErrRefused", err)
	}
	var refused *quorum.RefusedError
	if !errors.As(err, &refused) || refused.Decision.Reason != quorum.ReasonNoQuorum {
		t.Fatalf("Err() = %#v, want a RefusedError with reason NoQuorum", err)
	}
	wrapped := fmt.Errorf("scaling up: %w", err)
	if !errors.Is(wrapped, quorum.ErrRefused) {
		t.Fatalf("wrapped error lost ErrRefused")
	}
	if quorum.Check(quorum.View{Voters: []quorum.Voter{{Name: "etcd-a", Health: quorum.Healthy}}}, quorum.AddLearner()).Err() != nil {
		t.Fatalf("an allowed decision must have no error")
	}
}

// TestMinAvailable is the table of docs/design/quorum.md, "PDB arithmetic".
func TestMinAvailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		voters, target int
		want           int32
		wantDelete     bool
	}{
		{"steady 1", 1, 1, 1, false},
		{"steady 3", 3, 3, 2, false},
		{"steady 5", 5, 5, 3, false},
		{"bootstrap of 3, seed only", 1, 3, 2, false},
		{"scaling 3 → 5, 4 voters", 4, 5, 3, false},
		{"scaling 5 → 3, 4 voters", 4, 3, 3, false},
		{"paused", 0, 0, 0, true},
		{"all voters lost", 0, 3, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, del := quorum.MinAvailable(tt.voters, tt.target)
			if got != tt.want || del != tt.wantDelete {
				t.Errorf("MinAvailable(%d, %d) = %d, %v; want %d, %v", tt.voters, tt.target, got, del, tt.want, tt.wantDelete)
			}
		})
	}
}

func TestAvailableQuorum(t *testing.T) {
	t.Parallel()
	for voters := 0; voters <= 7; voters++ {
		for target := 0; target <= 7; target++ {
			want := max(voters, target)/2 + 1
			if got := quorum.AvailableQuorum(voters, target); got != want {
				t.Errorf("AvailableQuorum(%d, %d) = %d, want %d", voters, target, got, want)
			}
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	vw := view(5, 1, causeUnhealthy, &quorum.Learner{Name: "l0", Started: true})
	actions := []quorum.Action{quorum.AddLearner(), quorum.Promote("l0"), quorum.Remove("v0"), quorum.Disrupt("v3"), quorum.MoveLeader("v4")}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = quorum.Check(vw, actions[i%len(actions)])
	}
}
