package membership

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
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
// them started less than StartingVoterGrace ago, has not counted as healthy since, and is not
// failing: a learner just promoted, or a member just woken, on its way to Ready. A refusal caused only by them is waiting.
func onlyStartingVoters(s *Scope) ([]string, bool) {
	var out []string
	for _, e := range s.Voters() {
		if s.HealthyVoter(e) {
			continue
		}
		m, hasCR := s.MemberOf(e)
		if !hasCR || m.Unhealthy {
			return nil, false
		}
		started := startedAt(s, m, e)
		if started.IsZero() || s.Now.Sub(started) >= StartingVoterGrace {
			return nil, false
		}
		if h, ok := s.Etcd.HealthySeen[e.ID]; ok && !h.Before(started) {
			// It served since it last started: it is down, not on its way up.
			return nil, false
		}
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out, len(out) > 0
}

// startedAt is when voter m's etcd (etcd member e) last started, as well as the operator can
// tell: the later of its container's start (while its Pod runs) and the moment this operator
// first saw etcd list it started. The first is late for a member restarted in place; the second
// covers the moment right after a promotion, when etcd already answers but the cached Pod status
// may not show the container running yet, and a staged member, whose container (the data-dir
// guard) started long before its etcd did. Zero when neither is known, or when it was started
// before the operator first looked and its Pod's start is unknown.
func startedAt(s *Scope, m Member, e etcdclient.Member) time.Time {
	seen := s.Etcd.StartedSeen[e.ID]
	if m.PodRunning && m.ContainerStarted.After(seen) {
		return m.ContainerStarted
	}
	return seen
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
