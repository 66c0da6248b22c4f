package membership

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// gated returns a if the gate allows it over s's membership, and otherwise a Blocked action whose
// message names the members that are not healthy.
func gated(s *Scope, a Action, q quorum.Action) Action {
	d := quorum.Check(s.QuorumView(), q)
	out := gate(a, d)
	if !d.Allowed {
		if starting, ok := onlyStartingVoters(s); ok {
			// Normal progress, not a fault: no warning, just the step after this one.
			return Action{Kind: KindWait, Member: a.Member, MemberID: a.MemberID, Gate: &d, Reason: a.Reason,
				RequeueAfter: MembershipPoll, Message: fmt.Sprintf("%s once %s %s Ready", a.Message, strings.Join(starting, ", "), isAre(len(starting)))}
		}
		if bad := unhealthyVoters(s); len(bad) > 0 {
			out.Message += "; not healthy: " + strings.Join(bad, ", ")
		}
	}
	return out
}

// onlyStartingVoters names the voters that are not healthy, and reports whether every one of
// them has a running Pod whose etcd container started less than StartingVoterGrace ago: a
// learner just promoted, or a member just woken, on its way to Ready. A refusal caused only by
// them is waiting.
func onlyStartingVoters(s *Scope) ([]string, bool) {
	var out []string
	for _, e := range s.Voters() {
		if s.HealthyVoter(e) {
			continue
		}
		m, hasCR := s.MemberOf(e)
		if !hasCR || !m.PodRunning || m.Unhealthy || m.ContainerStarted.IsZero() || s.Now.Sub(m.ContainerStarted) >= StartingVoterGrace {
			return nil, false
		}
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out, len(out) > 0
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// unhealthyVoters names the voters that do not count as healthy, sorted.
func unhealthyVoters(s *Scope) []string {
	var out []string
	for _, v := range s.QuorumView().Voters {
		if !v.CountsHealthy() {
			out = append(out, v.Name)
		}
	}
	slices.Sort(out)
	return out
}
