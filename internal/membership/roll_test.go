package membership

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/etcd-operator/etcd-operator/internal/health"
)

// rolling3 is steady3 after a template change was latched: every member carries the old
// template (hash "old"), authorised and running; the latched template's hash is "new"; a
// leads, every member has been Ready for an hour.
func rolling3() Scope {
	s := steady3()
	for i := range s.Members {
		s.Members[i] = with(s.Members[i], func(m *Member) {
			m.TemplateCurrent = false
			m.WantHash, m.AuthorisedHash, m.PodHash = "new", "old", "old"
			m.ReadySince = t0
		})
	}
	return s
}

// rolled marks member i of s as authorised with the latched template and running it.
func rolled(s Scope, i int) Scope {
	s.Members[i] = with(s.Members[i], func(m *Member) { m.TemplateCurrent, m.AuthorisedHash, m.PodHash = true, "new", "new" })
	return s
}

// s4 is rolling3 of a Memory cluster after the surge member d (new template) was promoted.
func s4() Scope {
	s := rolling3()
	s.Memory = true
	d := with(mem("d", 4), func(m *Member) { m.WantHash, m.AuthorisedHash, m.PodHash = "new", "new", "new" })
	s.Members = append(s.Members, d)
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), voter(4, "d"))
	s.PVCs = nil
	return s
}

// surged says whether the surge member d of s has been Ready for RollSettle.
func surged(s Scope, settled bool) Scope {
	for i := range s.Members {
		if s.Members[i].Name != "d" {
			continue
		}
		s.Members[i].ReadySince = s.Now.Add(-time.Minute)
		if !settled {
			s.Members[i].Ready = false
			delete(s.Etcd.Statuses, 4)
		}
	}
	return s
}

func TestRoll(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		scope   func() Scope
		want    Action // compared on Kind, Member, MemberID, Hash, Disrupts, Reason
		message string // a substring of the message, when set
	}{
		{"converged: nothing to roll", steady3, Action{Kind: KindNone, Reason: ReasonReconciled}, ""},
		{"followers first, by name: b", rolling3,
			Action{Kind: KindAuthorise, Member: "b", MemberID: 2, Hash: "new", Disrupts: true, Reason: ReasonRollingUpdate}, "0/3 members updated; restarting b"},
		{"a not-Ready member goes first, even the leader", func() Scope {
			s := rolling3()
			s.Members[0] = with(s.Members[0], func(m *Member) { m.Ready, m.PodReady = false, false })
			delete(s.Etcd.Statuses, 1)
			s.Etcd.Leader = 2
			return s
		}, Action{Kind: KindAuthorise, Member: "a", MemberID: 1, Hash: "new", Disrupts: true, Reason: ReasonRollingUpdate}, ""},
		{"b authorised, its Pod not replaced yet: restarting b", func() Scope {
			s := rolling3()
			s.Members[1] = with(s.Members[1], func(m *Member) { m.TemplateCurrent, m.AuthorisedHash = true, "new" })
			return s
		}, Action{Kind: KindWait, Member: "b", Reason: ReasonRollingUpdate}, "0/3 members updated; restarting b"},
		{"b rolled but Ready for 5 s only: c waits", func() Scope {
			s := rolled(rolling3(), 1)
			s.Members[1].ReadySince = s.Now.Add(-5 * time.Second)
			return s
		}, Action{Kind: KindWait, Member: "c", MemberID: 3, Reason: ReasonRollingUpdate}, "1/3 members updated; restarting c once b has been Ready for 10s"},
		{"b rolled but 1001 entries behind the leader: c waits", func() Scope {
			s := rolled(rolling3(), 1)
			st := s.Etcd.Statuses[1]
			st.RaftAppliedIndex = 5000
			s.Etcd.Statuses[1] = st
			st = s.Etcd.Statuses[2]
			st.RaftAppliedIndex = 3999
			s.Etcd.Statuses[2] = st
			return s
		}, Action{Kind: KindWait, Member: "c", MemberID: 3, Reason: ReasonRollingUpdate}, "b caught up (1001 entries behind the leader)"},
		{"b rolled, 1000 entries behind is caught up: c next", func() Scope {
			s := rolled(rolling3(), 1)
			st := s.Etcd.Statuses[1]
			st.RaftAppliedIndex = 5000
			s.Etcd.Statuses[1] = st
			st = s.Etcd.Statuses[2]
			st.RaftAppliedIndex = 4000
			s.Etcd.Statuses[2] = st
			return s
		}, Action{Kind: KindAuthorise, Member: "c", MemberID: 3, Hash: "new", Disrupts: true, Reason: ReasonRollingUpdate}, "1/3 members updated; restarting c"},
		{"only the leader left: leadership moves to an updated follower first", func() Scope {
			return rolled(rolled(rolling3(), 1), 2)
		}, Action{Kind: KindMoveLeader, Member: "a", MemberID: 3, Reason: ReasonRollingUpdate}, "2/3 members updated; moving leadership from a to c"},
		{"leadership moved: the old leader restarts", func() Scope {
			s := rolled(rolled(rolling3(), 1), 2)
			s.Etcd.Leader = 2
			for id, st := range s.Etcd.Statuses {
				st.Leader = 2
				s.Etcd.Statuses[id] = st
			}
			return s
		}, Action{Kind: KindAuthorise, Member: "a", MemberID: 1, Hash: "new", Disrupts: true, Reason: ReasonRollingUpdate}, "2/3 members updated; restarting a"},
		{"every member rolled: converged", func() Scope {
			return rolled(rolled(rolled(rolling3(), 0), 1), 2)
		}, Action{Kind: KindNone, Reason: ReasonReconciled}, ""},
		{"another voter not Ready: wait", func() Scope {
			s := rolling3()
			s.Members[2] = with(s.Members[2], func(m *Member) { m.Ready = false })
			s.Etcd.Leader = 2
			return s
		}, Action{Kind: KindAuthorise, Member: "c", MemberID: 3, Hash: "new", Disrupts: true, Reason: ReasonRollingUpdate}, ""},
		{"a voter that does not answer Status holds the next restart", func() Scope {
			s := rolled(rolling3(), 1)
			delete(s.Etcd.Statuses, 2)
			return s
		}, Action{Kind: KindWait, Member: "c", MemberID: 3, Reason: ReasonRollingUpdate}, "restarting c once b is Ready"},
		{"a learner holds the roll", func() Scope {
			s := rolling3()
			s.Target = 4
			s.Members = append(s.Members, with(mem("d", 4), func(m *Member) { m.Ready = false; m.WantHash, m.AuthorisedHash, m.PodHash = "new", "new", "new" }))
			s.Etcd.Members = append(s.Etcd.Members, learner(4, "d", false))
			return s
		}, Action{Kind: KindWait, Member: "d", MemberID: 4, Reason: ReasonScalingUp}, ""},
		{"a member being removed holds the roll", func() Scope {
			s := rolling3()
			s.Target = 2
			s.Members[2].RemovalReason = RemovalReasonScaleDown
			return s
		}, Action{Kind: KindRemove, Member: "c", MemberID: 3, Reason: ReasonScalingDown}, ""},
		{"a member whose Pod already runs the latched template is only recorded", func() Scope {
			s := rolling3()
			s.Members[2] = with(s.Members[2], func(m *Member) { m.PodHash = "new" })
			return s
		}, Action{Kind: KindAuthorise, Member: "c", Hash: "new", Reason: ReasonRollingUpdate}, "recording template new on c"},
		{"an operator upgrade changed the hash, not the template: rolled too", func() Scope {
			s := steady3()
			for i := range s.Members {
				s.Members[i].WantHash, s.Members[i].AuthorisedHash, s.Members[i].PodHash = "new", "old", "old"
			}
			return s
		}, Action{Kind: KindAuthorise, Member: "b", MemberID: 2, Hash: "new", Disrupts: true, Reason: ReasonRollingUpdate}, ""},
		{"a rolled member that did not start halts the roll", func() Scope {
			s := rolling3()
			s.Members[1] = with(s.Members[1], func(m *Member) {
				m.TemplateCurrent, m.AuthorisedHash = true, "new"
				m.Ready, m.Unhealthy, m.HealthyReason, m.HealthyMessage = false, true, health.ReasonStartFailed, "not Ready within 5m0s"
			})
			return s
		}, Action{Kind: KindWait, Member: "b", Reason: ReasonRollingUpdate}, "roll halted: b did not become Ready with the new template: not Ready within 5m0s"},
		{"a rolled member running the new template that did not start halts the roll", func() Scope {
			s := rolling3()
			s.Members[1] = with(s.Members[1], func(m *Member) {
				m.TemplateCurrent, m.AuthorisedHash, m.PodHash = true, "new", "new"
				m.Ready, m.Unhealthy, m.HealthyReason, m.HealthyMessage = false, true, health.ReasonStartFailed, "not Ready within 5m0s"
			})
			delete(s.Etcd.Statuses, 2)
			return s
		}, Action{Kind: KindWait, Member: "b", Reason: ReasonRollingUpdate}, "1/3 members updated; roll halted: b did not become Ready"},
		{"after a corrected spec, the member that failed to start is rolled first", func() Scope {
			s := rolling3()
			s.Members[1] = with(s.Members[1], func(m *Member) {
				m.TemplateCurrent, m.AuthorisedHash, m.PodHash, m.WantHash = false, "bad", "bad", "fixed"
				m.Ready, m.Unhealthy, m.HealthyReason = false, true, health.ReasonStartFailed
			})
			delete(s.Etcd.Statuses, 2)
			return s
		}, Action{Kind: KindAuthorise, Member: "b", MemberID: 2, Hash: "fixed", Disrupts: true, Reason: ReasonRollingUpdate}, ""},
		{"one member: restarted in place, disruptively", func() Scope {
			s := rolling3()
			s.Target = 1
			s.Members = s.Members[:1]
			s.Etcd = healthyEtcd(1, voter(1, "a"))
			s.PVCs = s.PVCs[:1]
			return s
		}, Action{Kind: KindAuthorise, Member: "a", MemberID: 1, Hash: "new", Disrupts: true, Reason: ReasonRollingUpdate}, "the only voter"},
		{"two members of three healthy: the gate refuses a restart of a healthy one", func() Scope {
			s := rolling3()
			s.Target = 3
			s.Members[0] = with(s.Members[0], func(m *Member) { m.TemplateCurrent, m.AuthorisedHash, m.PodHash = true, "new", "new" })
			delete(s.Etcd.Statuses, 3)
			s.Members[2] = with(s.Members[2], func(m *Member) {
				m.TemplateCurrent, m.AuthorisedHash, m.PodHash, m.PodReady = true, "new", "new", false
			})
			return s
		}, Action{Kind: KindWait, Member: "b", MemberID: 2, Reason: ReasonRollingUpdate}, "once c is Ready"},
		{"a member whose deletion is held is not rolled", func() Scope {
			s := rolled(rolled(rolling3(), 0), 2)
			s.Members[1].Deleting = true
			return s
		}, Action{Kind: KindNone, Reason: ReasonReconciled}, ""},
		{"Memory: a member with the new template is added first", func() Scope {
			s := rolling3()
			s.Memory, s.PVCs = true, nil
			return s
		}, Action{Kind: KindCreateMember, Reason: ReasonRollingUpdate}, "0/3 members updated; adding a member with the new template to replace c"},
		{"Memory: the new member is not Ready yet: the removal waits", func() Scope {
			return surged(s4(), false)
		}, Action{Kind: KindWait, Member: "c", MemberID: 3, Reason: ReasonRollingUpdate}, "1/4 members updated; removing c once d is Ready"},
		{"Memory: the new member settled: the first outdated follower goes", func() Scope {
			return surged(s4(), true)
		}, Action{Kind: KindRemove, Member: "c", MemberID: 3, Reason: ReasonRollingUpdate}, "removing c, replaced by a member with the new template"},
		{"Memory: the leader goes last, after leadership moved to the updated member", func() Scope {
			s := surged(s4(), true)
			s.Members = slices.DeleteFunc(s.Members, func(m Member) bool { return m.Name == "b" || m.Name == "c" })
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(4, "d"))
			s.Target = 1
			return s
		}, Action{Kind: KindMoveLeader, Member: "a", MemberID: 4, Reason: ReasonRollingUpdate}, ""},
		{"Memory: one member goes 1 → 2 first", func() Scope {
			s := rolling3()
			s.Memory, s.Target = true, 1
			s.Members, s.PVCs = s.Members[:1], nil
			s.Etcd = healthyEtcd(1, voter(1, "a"))
			return s
		}, Action{Kind: KindCreateMember, Reason: ReasonRollingUpdate}, "adding a member with the new template to replace a"},
		{"Memory: a scale-down below the surge is an ordinary scale-down", func() Scope {
			s := surged(s4(), true)
			s.Target = 2
			return s
		}, Action{Kind: KindRemove, Member: "c", MemberID: 3, Reason: ReasonScalingDown}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Next(tc.scope())
			opts := cmpopts.IgnoreFields(Action{}, "Message", "Gate", "RequeueAfter", "InitialCluster", "PeerURL", "InEtcd", "RemovalReason", "Refused")
			if diff := cmp.Diff(tc.want, got, opts); diff != "" {
				t.Errorf("Next() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
			if tc.message != "" && !strings.Contains(got.Message, tc.message) {
				t.Errorf("message %q does not contain %q", got.Message, tc.message)
			}
		})
	}
}

func TestRollCountsAndConvergence(t *testing.T) {
	t.Parallel()
	s := rolled(rolling3(), 1)
	if Converged(&s) {
		t.Error("a cluster with two members on the old template is converged")
	}
	if c := Count(&s); c.Updated != 1 {
		t.Errorf("updated = %d, want 1", c.Updated)
	}
	// Authorised but the Pod still runs the old hash: not updated, not converged.
	s = rolled(rolled(rolling3(), 0), 1)
	s.Members[2] = with(s.Members[2], func(m *Member) { m.TemplateCurrent, m.AuthorisedHash = true, "new" })
	if Converged(&s) || Count(&s).Updated != 2 {
		t.Errorf("converged %v, updated %d; want false, 2", Converged(&s), Count(&s).Updated)
	}
	s.Members[2].PodHash = "new"
	if !Converged(&s) || Count(&s).Updated != 3 {
		t.Errorf("converged %v, updated %d; want true, 3", Converged(&s), Count(&s).Updated)
	}
}

func TestRollHaltDegrades(t *testing.T) {
	t.Parallel()
	s := rolling3()
	s.Members[1] = with(s.Members[1], func(m *Member) {
		m.TemplateCurrent, m.AuthorisedHash = true, "new"
		m.Ready, m.Unhealthy, m.HealthyReason, m.HealthyMessage = false, true, health.ReasonStartFailed, "not Ready within 5m0s"
	})
	conds := Conditions(ConditionInput{Scope: &s, Action: Next(s)})
	d := conds[2]
	if d.Reason != ReasonMemberStartFailed || !strings.Contains(d.Message, "member b did not start with its new template, the rolling update is halted") {
		t.Errorf("Degraded = %s: %s", d.Reason, d.Message)
	}
	if p := conds[1]; p.Reason != ReasonRollingUpdate || !strings.Contains(p.Message, "roll halted") {
		t.Errorf("Progressing = %s: %s", p.Reason, p.Message)
	}
}
