package membership

import (
	"slices"
	"testing"
)

func TestRankVictims(t *testing.T) {
	t.Parallel()
	// Each case ranks a, b, c (created in that order, so c is the newest) and one tweak;
	// the leader is a unless said otherwise.
	cases := []struct {
		name   string
		tweak  func(*Scope)
		victim string
	}{
		{"all equal: newest first", func(*Scope) {}, "c"},
		{"same age: name descending", func(s *Scope) {
			for i := range s.Members {
				s.Members[i].Created = t0
			}
		}, "c"},
		{"pending beats everything", func(s *Scope) {
			s.Members[0].Pending = true
			s.Members[1].RemoveFirst = true
			s.Etcd.Members = s.Etcd.Members[1:]
		}, "a"},
		{"remove-first beats a learner", func(s *Scope) {
			s.Members[0].RemoveFirst = true
			s.Etcd.Members[1].IsLearner = true
		}, "a"},
		{"learner beats unhealthy", func(s *Scope) {
			s.Etcd.Members[0].IsLearner = true
			s.Members[1].Unhealthy = true
		}, "a"},
		{"unhealthy beats not ready", func(s *Scope) {
			s.Members[0].Unhealthy = true
			s.Members[1].Ready = false
		}, "a"},
		{"not ready beats outdated", func(s *Scope) {
			s.Members[0].Ready = false
			s.Members[1].TemplateCurrent = false
		}, "a"},
		{"outdated (Updated=False) beats a follower", func(s *Scope) {
			s.Etcd.Leader = 2
			s.Members[1].Updated = false
		}, "b"},
		{"followers before the leader", func(s *Scope) { s.Etcd.Leader = 3 }, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := steady3()
			c.tweak(&s)
			got := RankVictims(&s, s.Members)
			if got[0].Name != c.victim {
				t.Errorf("victim = %s, want %s (ranking %v)", got[0].Name, c.victim, namesOf(got))
			}
		})
	}
}

func TestRankVictimsIsATotalOrderIndependentOfInputOrder(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Members[1].Ready = false
	want := namesOf(RankVictims(&s, s.Members))
	rev := slices.Clone(s.Members)
	slices.Reverse(rev)
	if got := namesOf(RankVictims(&s, rev)); !slices.Equal(got, want) {
		t.Errorf("ranking depends on input order: %v vs %v", got, want)
	}
	if !slices.Equal(want, []string{"b", "c", "a"}) {
		t.Errorf("ranking = %v, want [b c a]", want)
	}
}

func namesOf(ms []Member) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}
