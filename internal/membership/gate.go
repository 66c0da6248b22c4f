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

// startedAt is when voter m (etcd member e) last started: its etcd container's start while its
// Pod runs, else when this operator first saw etcd list it started. The second covers the moment
// right after a promotion: etcd already runs and answers, but the Pod's status, which the
// kubelet reports a little later, may still say otherwise in the cache. Zero when neither is
// known, or when it was started before the operator first looked.
func startedAt(s *Scope, m Member, e etcdclient.Member) time.Time {
	if m.PodRunning && !m.ContainerStarted.IsZero() {
		return m.ContainerStarted
	}
	return s.Etcd.StartedSeen[e.ID]
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
