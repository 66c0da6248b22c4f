package membership

import (
	"slices"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
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

// TestRankVictimsFollowsBehaviourOrder ranks one member per key of the victim order
// (docs/design/membership-flows.md, "Scale down"), each older than the member of the next key (so
// age alone would rank them backwards) and each showing only its own key, and expects exactly
// that order.
func TestRankVictimsFollowsBehaviourOrder(t *testing.T) {
	t.Parallel()
	names := []string{"pending", "remove-first", "learner", "unhealthy", "not-ready", "outdated", "follower-new", "follower-old", "leader"}
	s := Scope{Target: 3, ClusterID: "cid", Now: t0.Add(time.Hour)}
	var etcd []etcdclient.Member
	for i, n := range names {
		// Older for earlier keys; the two followers swap so that key 8 (newest first) decides.
		age := i
		switch n {
		case "follower-new":
			age = len(names)
		case "leader":
			age = len(names) + 1
		}
		m := mem(n, age)
		switch n {
		case "pending":
			m.Pending = true
		case "remove-first":
			m.RemoveFirst = true
		case "unhealthy":
			m.Unhealthy = true
		case "not-ready":
			m.Ready = false
		case "outdated":
			m.TemplateCurrent = false
		}
		s.Members = append(s.Members, m)
		switch n {
		case "pending":
		case "learner":
			etcd = append(etcd, learner(uint64(i+1), n, true))
		default:
			etcd = append(etcd, voter(uint64(i+1), n))
		}
	}
	s.Etcd = healthyEtcd(uint64(len(names)), etcd...)
	want := []string{"pending", "remove-first", "learner", "unhealthy", "not-ready", "outdated", "follower-new", "follower-old", "leader"}
	in := slices.Clone(s.Members)
	slices.Reverse(in)
	if got := namesOf(RankVictims(&s, in)); !slices.Equal(got, want) {
		t.Errorf("ranking = %v\nwant      %v", got, want)
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
