package membership

import (
	"cmp"
	"slices"
)

// RankVictims orders candidates for scale-down removal, best victim first (docs/design/membership-flows.md, "Scale down"). The
// first key that differs decides:
//
//  1. pending members (never added to etcd: deleting them costs nothing);
//  2. members annotated remove-first;
//  3. learners (they do not vote);
//  4. Healthy=False;
//  5. not Ready;
//  6. outdated: a template other than the latched one, its hash not authorised, or a Pod not running it;
//  7. followers before the leader (removing the leader costs an election);
//  8. newest creationTimestamp, then name descending.
//
// Removing an unhealthy member before a healthy one keeps the most healthy voters, so the gate
// over the target membership is most likely to allow the removal.
func RankVictims(s *Scope, candidates []Member) []Member {
	type ranked struct {
		m    Member
		keys [7]bool // true sorts first
	}
	rs := make([]ranked, 0, len(candidates))
	for _, m := range candidates {
		e, inEtcd := s.EtcdMemberOf(m)
		rs = append(rs, ranked{m: m, keys: [7]bool{
			m.Pending && !inEtcd,
			m.RemoveFirst,
			inEtcd && e.IsLearner,
			m.Unhealthy,
			!m.Ready,
			!m.current(),
			!inEtcd || e.ID != s.Etcd.Leader,
		}})
	}
	slices.SortStableFunc(rs, func(a, b ranked) int {
		for i := range a.keys {
			if a.keys[i] != b.keys[i] {
				if a.keys[i] {
					return -1
				}
				return 1
			}
		}
		if c := b.m.Created.Compare(a.m.Created); c != 0 {
			return c // newest first
		}
		return cmp.Compare(b.m.Name, a.m.Name) // name descending
	})
	out := make([]Member, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.m)
	}
	return out
}
