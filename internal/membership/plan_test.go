package membership

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

func TestNext(t *testing.T) {
	t.Parallel()
	seed := with(mem("s", 1), func(m *Member) { m.Bootstrap = true })
	pendingSeed := with(seed, func(m *Member) { m.Pending = true; m.PodRunning, m.PodReady, m.Ready = false, false, false })
	pending := func(name string, age int) Member {
		return with(mem(name, age), func(m *Member) {
			m.Pending = true
			m.PodRunning, m.PodReady, m.Ready, m.VoterHint = false, false, false, false
		})
	}

	cases := []struct {
		name  string
		scope func() Scope
		want  Action // compared on Kind, Member, MemberID, InEtcd, Reason, InitialCluster/ClusterID/PVC when set
	}{
		{"B0: paused before any data", func() Scope { return Scope{Target: 0} },
			Action{Kind: KindNone, Reason: ReasonPaused}},
		{"B1: no members creates the seed", func() Scope { return Scope{Target: 3} },
			Action{Kind: KindCreateSeed, Reason: ReasonWaitingForSeed}},
		{"B2: pending seed gets its initial cluster", func() Scope { return Scope{Target: 3, Members: []Member{pendingSeed}} },
			Action{Kind: KindInitSeed, Member: "s", InitialCluster: "s=" + peer("s"), Reason: ReasonWaitingForSeed}},
		{"B3: seed Pod not running waits", func() Scope {
			return Scope{Target: 3, Members: []Member{with(seed, func(m *Member) { m.PodRunning = false })}}
		}, Action{Kind: KindWait, Member: "s", Reason: ReasonWaitingForSeed}},
		{"B4: seed running and alone latches the cluster ID", func() Scope {
			return Scope{Target: 3, Members: []Member{seed}, Etcd: healthyEtcd(7, voter(7, "s"))}
		}, Action{Kind: KindLatchClusterID, Member: "s", MemberID: 7, ClusterID: SeedClusterID(7), Reason: ReasonBootstrapping}},
		{"B4: seed listed with others does not latch", func() Scope {
			return Scope{Target: 3, Members: []Member{seed}, Etcd: healthyEtcd(7, voter(7, "s"), voter(8, "x"))}
		}, Action{Kind: KindWait, Member: "s", Reason: ReasonBootstrapping}},
		{"B5: formed seed of 3 creates a member", func() Scope {
			return Scope{Target: 3, ClusterID: "cid", Bootstrapping: true, Members: []Member{seed}, Etcd: healthyEtcd(7, voter(7, "s"))}
		}, Action{Kind: KindCreateMember, Reason: ReasonBootstrapping}},
		{"pending member not in etcd is added as a learner", func() Scope {
			return Scope{Target: 3, ClusterID: "cid", Members: []Member{seed, pending("p", 2)}, Etcd: healthyEtcd(7, voter(7, "s"))}
		}, Action{Kind: KindJoin, Member: "p", InitialCluster: "p=" + peer("p") + ",s=" + peer("s"), Reason: ReasonScalingUp}},
		{"pending member already in etcd is only patched", func() Scope {
			return Scope{Target: 3, ClusterID: "cid", Members: []Member{seed, pending("p", 2)}, Etcd: healthyEtcd(7, voter(7, "s"), learner(8, "p", false))}
		}, Action{Kind: KindJoin, Member: "p", InEtcd: true, InitialCluster: "p=" + peer("p") + ",s=" + peer("s"), Reason: ReasonScalingUp}},
		{"unstarted learner with a member waits", func() Scope {
			return Scope{Target: 3, ClusterID: "cid", Members: []Member{seed, with(mem("p", 2), func(m *Member) { m.Ready = false })},
				Etcd: healthyEtcd(7, voter(7, "s"), learner(8, "p", false))}
		}, Action{Kind: KindWait, Member: "p", MemberID: 8, Reason: ReasonScalingUp}},
		{"started learner is promoted", func() Scope {
			return Scope{Target: 3, ClusterID: "cid", Members: []Member{seed, with(mem("p", 2), func(m *Member) { m.Ready = false })},
				Etcd: healthyEtcd(7, voter(7, "s"), learner(8, "p", true))}
		}, Action{Kind: KindPromote, Member: "p", MemberID: 8, Reason: ReasonPromotingLearner}},
		{"converged", func() Scope { return steady3() }, Action{Kind: KindNone, Reason: ReasonReconciled}},
		{"scale 3 to 5 creates a member", func() Scope { s := steady3(); s.Target = 5; return s },
			Action{Kind: KindCreateMember, Reason: ReasonScalingUp}},
		{"scale 3 to 2 removes the newest follower", func() Scope { s := steady3(); s.Target = 2; return s },
			Action{Kind: KindRemove, Member: "c", MemberID: 3, InEtcd: true, Reason: ReasonScalingDown}},
		{"scale-down victim that leads: leadership moves first", func() Scope {
			s := steady3()
			s.Target = 2
			s.Etcd.Leader = 3
			s.Members[2].RemoveFirst = true // otherwise a follower ranks first
			return s
		}, Action{Kind: KindMoveLeader, Member: "c", MemberID: 2, Reason: ReasonScalingDown}},
		{"scale 3 to 2 with b down removes b", func() Scope {
			s := steady3()
			s.Target = 2
			s.Members[1] = with(s.Members[1], func(m *Member) { m.Ready, m.PodReady = false, false })
			delete(s.Etcd.Statuses, 2)
			return s
		}, Action{Kind: KindRemove, Member: "b", MemberID: 2, InEtcd: true, Reason: ReasonScalingDown}},
		{"removal-reason member still in etcd is removed", func() Scope {
			s := steady3()
			s.Members[2] = with(s.Members[2], func(m *Member) { m.RemovalReason = RemovalReasonScaleDown })
			return s
		}, Action{Kind: KindRemove, Member: "c", MemberID: 3, InEtcd: true, Reason: ReasonScalingDown}},
		{"removal-reason member gone from etcd is deleted", func() Scope {
			s := steady3()
			s.Members[2] = with(s.Members[2], func(m *Member) { m.RemovalReason = RemovalReasonScaleDown })
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"))
			return s
		}, Action{Kind: KindRemove, Member: "c", Reason: ReasonScalingDown}},
		{"removal-reason member deleting and gone: nothing (finalizer releases)", func() Scope {
			s := steady3()
			s.Target = 2
			s.Members[2] = with(s.Members[2], func(m *Member) { m.RemovalReason = RemovalReasonScaleDown; m.Deleting = true })
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"))
			return s
		}, Action{Kind: KindNone, Reason: ReasonReconciled}},
		{"orphan PVC of a removed member is deleted", func() Scope {
			s := steady3()
			s.PVCs = append(s.PVCs, PVC{Name: "data-gone", Member: "gone", MemberUID: "uid-gone"})
			return s
		}, Action{Kind: KindDeletePVC, Member: "gone", PVC: "data-gone", Reason: ReasonScalingDown}},
		{"orphan PVC whose member etcd still lists is kept", func() Scope {
			s := steady3()
			s.Target = 4
			s.PVCs = append(s.PVCs, PVC{Name: "data-d", Member: "d", MemberUID: "uid-d"})
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), voter(4, "d"))
			return s
		}, Action{Kind: KindCreateMember, Reason: ReasonScalingUp}},
		{"orphan learner within its grace waits", func() Scope {
			s := steady3()
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), learner(9, "x", false))
			s.Etcd.FirstSeen[9] = s.Now.Add(-10 * time.Second)
			return s
		}, Action{Kind: KindWait, MemberID: 9, Reason: ReasonScalingUp}},
		{"orphan learner after its grace is removed", func() Scope {
			s := steady3()
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), learner(9, "x", false))
			return s
		}, Action{Kind: KindRemoveOrphan, MemberID: 9, Reason: ReasonScalingUp}},
		{"pause: 3 to 0 first scales down", func() Scope { s := steady3(); s.Target = 0; return s },
			Action{Kind: KindRemove, Member: "c", MemberID: 3, InEtcd: true, Reason: ReasonScalingDown}},
		{"pause: the last member becomes dormant", func() Scope {
			s := steady3()
			s.Target, s.Members, s.Etcd, s.PVCs = 0, s.Members[:1], healthyEtcd(1, voter(1, "a")), s.PVCs[:1]
			return s
		}, Action{Kind: KindSetDormant, Member: "a", Reason: ReasonScalingDown}},
		{"pause: the last member waits for a member being removed to be gone", func() Scope {
			// Its EtcdMember's finalizer needs etcd's member list, which only the last
			// member can answer: made dormant first, it would hold that member forever (e2e
			// TestLifecycleTimings caught it: the removed member's Pod crash-looped while paused).
			s := steady3()
			s.Target, s.Etcd, s.PVCs = 0, healthyEtcd(1, voter(1, "a")), s.PVCs[:2]
			s.Members = []Member{s.Members[0], with(s.Members[1], func(m *Member) {
				m.Deleting, m.RemovalReason = true, RemovalReasonScaleDown
			})}
			return s
		}, Action{Kind: KindWait, Reason: ReasonScalingDown}},
		{"paused", func() Scope {
			s := steady3()
			s.Target, s.Members, s.Etcd, s.PVCs = 0, []Member{with(s.Members[0], func(m *Member) { m.Dormant = true })}, healthyEtcd(1, voter(1, "a")), s.PVCs[:1]
			return s
		}, Action{Kind: KindNone, Reason: ReasonPaused}},
		{"resume wakes the dormant member without etcd", func() Scope {
			s := steady3()
			s.Members, s.Etcd = []Member{with(s.Members[0], func(m *Member) { m.Dormant = true })}, Etcd{}
			return s
		}, Action{Kind: KindWake, Member: "a", Reason: ReasonResuming}},
		{"resume wakes the dormant member when etcd answers", func() Scope {
			s := steady3()
			s.Members, s.Etcd = []Member{with(s.Members[0], func(m *Member) { m.Dormant = true })}, healthyEtcd(1, voter(1, "a"))
			s.PVCs = s.PVCs[:1]
			return s
		}, Action{Kind: KindWake, Member: "a", Reason: ReasonResuming}},
		{"quorum refusal: scale down 3 to 2 with two members down", func() Scope {
			s := steady3()
			s.Target = 2
			delete(s.Etcd.Statuses, 1)
			delete(s.Etcd.Statuses, 2)
			return s
		}, Action{Kind: KindBlocked, Member: "c", MemberID: 3, Reason: ReasonWaitingForHealthyMembers}},
		{"quorum refusal: scale up without quorum", func() Scope {
			s := steady3()
			s.Target = 5
			delete(s.Etcd.Statuses, 1)
			delete(s.Etcd.Statuses, 2)
			return s
		}, Action{Kind: KindBlocked, Reason: ReasonWaitingForHealthyMembers}},
		{"quorum refusal: promote without quorum", func() Scope {
			s := steady3()
			s.Target = 4
			s.Members = append(s.Members, with(mem("d", 4), func(m *Member) { m.Ready = false }))
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), learner(4, "d", true))
			delete(s.Etcd.Statuses, 1)
			delete(s.Etcd.Statuses, 2)
			return s
		}, Action{Kind: KindBlocked, Member: "d", MemberID: 4, Reason: ReasonWaitingForHealthyMembers}},
		{"bootstrap with members but no single seed waits", func() Scope {
			s := steady3()
			s.ClusterID = ""
			return s
		}, Action{Kind: KindWait, Reason: ReasonBootstrapping}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := Next(c.scope())
			if got.Kind != c.want.Kind || got.Member != c.want.Member || got.MemberID != c.want.MemberID ||
				got.InEtcd != c.want.InEtcd || got.Reason != c.want.Reason ||
				(c.want.InitialCluster != "" && got.InitialCluster != c.want.InitialCluster) ||
				(c.want.ClusterID != "" && got.ClusterID != c.want.ClusterID) || got.PVC != c.want.PVC {
				t.Errorf("Next =\n  %+v\nwant\n  %+v", got, c.want)
			}
			if got.Kind == KindBlocked && (got.Gate == nil || got.Gate.Allowed || got.Message == "") {
				t.Errorf("a blocked action must carry a refused gate decision and a message: %+v", got)
			}
		})
	}
}

// TestNextGatesEveryMembershipAction checks that every action that changes membership or
// leadership carries an allowed gate decision: the planner never plans an ungated mutation.
func TestNextGatesEveryMembershipAction(t *testing.T) {
	t.Parallel()
	scopes := map[string]Scope{}
	s := steady3()
	s.Target = 5
	scopes["add"] = s
	s = steady3()
	s.Target = 1
	scopes["remove"] = s
	s = steady3()
	s.Target, s.Etcd.Leader = 2, 3
	scopes["move"] = s
	s = steady3()
	s.Target = 4
	s.Members = append(s.Members, with(mem("d", 4), func(m *Member) { m.Ready = false }))
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), learner(4, "d", true))
	scopes["promote"] = s
	for name, s := range scopes {
		a := Next(s)
		if a.Gate == nil || !a.Gate.Allowed {
			t.Errorf("%s: %s planned without an allowed gate decision: %+v", name, a.Kind, a.Gate)
		}
	}
}

func TestBlockedMessageNamesUnhealthyMembers(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Target = 2
	delete(s.Etcd.Statuses, 1)
	delete(s.Etcd.Statuses, 2)
	a := Next(s)
	if a.Gate == nil || a.Gate.Reason != quorum.ReasonNoQuorum {
		t.Fatalf("gate = %+v, want NoQuorum", a.Gate)
	}
	if want := "; not healthy: a, b"; len(a.Message) < len(want) || a.Message[len(a.Message)-len(want):] != want {
		t.Errorf("message %q does not end with %q", a.Message, want)
	}
}

func TestLeaderTransfereePrefersUpdatedThenAppliedIndex(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Target = 2
	s.Etcd.Leader = 3
	// b has the higher applied index, but runs an outdated template: a wins.
	s.Etcd.Statuses[2] = etcdclient.Status{ID: 2, RaftAppliedIndex: 100}
	s.Members[1].TemplateCurrent = false
	// Ranking would now pick b as the victim (outdated), so pin the victim with remove-first.
	s.Members[2].RemoveFirst = true
	a := Next(s)
	if a.Kind != KindMoveLeader || a.MemberID != 1 {
		t.Fatalf("Next = %+v, want MoveLeader to 1", a)
	}
}

// TestJoinWaitsForStrictReconfigSettle: etcd refuses an add until its leader has been connected
// to every voter for 5 s, so a learner add right after a promotion is scheduled for the moment
// etcd will accept it, rather than sent and refused.
func TestJoinWaitsForStrictReconfigSettle(t *testing.T) {
	t.Parallel()
	pending := with(mem("p", 3), func(m *Member) {
		m.Pending = true
		m.PodRunning, m.PodReady, m.Ready, m.VoterHint = false, false, false, false
	})
	base := func(startedAgo map[uint64]time.Duration) Scope {
		s := Scope{Target: 3, ClusterID: "cid", Now: t0.Add(time.Hour),
			Members: []Member{mem("a", 1), mem("b", 2), pending},
			Etcd:    healthyEtcd(1, voter(1, "a"), voter(2, "b"))}
		s.Etcd.StartedSeen = map[uint64]time.Time{}
		for id, ago := range startedAgo {
			s.Etcd.StartedSeen[id] = s.Now.Add(-ago)
		}
		return s
	}
	cases := []struct {
		name       string
		startedAgo map[uint64]time.Duration
		wantKind   Kind
		wantAfter  time.Duration
	}{
		{"voter b started 2 s ago: wait 3 s", map[uint64]time.Duration{1: time.Hour, 2: 2 * time.Second}, KindWait, 3 * time.Second},
		{"voter b started 5 s ago: add", map[uint64]time.Duration{1: time.Hour, 2: 5 * time.Second}, KindJoin, 0},
		{"the leader itself started 1 s ago: add", map[uint64]time.Duration{1: time.Second, 2: time.Hour}, KindJoin, 0},
		{"start times unknown (operator restarted): add, etcd remains the judge", nil, KindJoin, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Next(base(tc.startedAgo))
			if got.Kind != tc.wantKind || got.RequeueAfter != tc.wantAfter || got.Member != "p" {
				t.Fatalf("Next = %+v, want kind %s for p, requeue after %s", got, tc.wantKind, tc.wantAfter)
			}
			if tc.wantKind == KindWait && !strings.Contains(got.Message, "voter b") {
				t.Errorf("message %q does not name the voter waited for", got.Message)
			}
		})
	}
	// Growing 4 → 5 needs the leader and 2 voters connected for 5 s: a voter promoted a moment
	// ago does not hold the add when the other 3 have long been up.
	s4 := Scope{Target: 5, ClusterID: "cid", Now: t0.Add(time.Hour),
		Members: []Member{mem("a", 1), mem("b", 2), mem("c", 3), mem("d", 4), with(mem("p", 5), func(m *Member) {
			m.Pending = true
			m.PodRunning, m.PodReady, m.Ready, m.VoterHint = false, false, false, false
		})},
		Etcd: healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), voter(4, "d"))}
	s4.Etcd.StartedSeen = map[uint64]time.Time{1: {}, 2: {}, 3: {}, 4: s4.Now.Add(-time.Second)}
	if got := Next(s4); got.Kind != KindJoin {
		t.Errorf("4 voters, the newest up 1 s: Next = %+v, want a join", got)
	}
	// With every follower up for under 5 s (4, 2 and 1 s), the add waits until the second of
	// them has settled: the leader and two followers are a quorum of 5.
	s4.Etcd.StartedSeen[2] = s4.Now.Add(-4 * time.Second)
	s4.Etcd.StartedSeen[3] = s4.Now.Add(-2 * time.Second)
	if got := Next(s4); got.Kind != KindWait || got.RequeueAfter != 3*time.Second || !strings.Contains(got.Message, "voter c") {
		t.Errorf("4 voters, followers up for 4, 2 and 1 s: Next = %+v, want a 3 s wait for c", got)
	}
	// A staged member's container starts long before its etcd: its start says nothing about
	// when the leader connected, so the settle is timed from etcd's listing alone.
	early := base(map[uint64]time.Duration{1: time.Hour, 2: 2 * time.Second})
	early.Members[1].ContainerStarted = early.Now.Add(-time.Minute)
	if got := Next(early); got.Kind != KindWait || got.RequeueAfter != 3*time.Second {
		t.Errorf("b's container started 1 min ago, etcd listed it started 2 s ago: Next = %+v, want a 3 s wait", got)
	}
	// The zero time marks a member started before the operator first looked.
	s := base(nil)
	s.Etcd.StartedSeen = map[uint64]time.Time{2: {}}
	if got := Next(s); got.Kind != KindJoin {
		t.Errorf("member started before the operator looked: Next = %+v, want a join", got)
	}
}

// TestGateRefusalByStartingVoterIsWaiting: right after a promotion the new voter is not Ready
// yet, so growing 2 → 3 is refused by the gate. That is progress, not a fault: the planner
// waits without the WaitingForHealthyMembers warning, unless the voter stays not Ready for
// StartingVoterGrace or its Pod is not running.
func TestGateRefusalByStartingVoterIsWaiting(t *testing.T) {
	t.Parallel()
	scope := func(startedAgo time.Duration, podRunning bool) Scope {
		s := Scope{Target: 3, ClusterID: "cid", Now: t0.Add(time.Hour),
			Etcd: healthyEtcd(1, voter(1, "a"), voter(2, "b"))}
		s.Members = []Member{mem("a", 1), with(mem("b", 2), func(m *Member) {
			m.PodReady, m.Ready, m.PodRunning = false, false, podRunning
			if startedAgo > 0 {
				m.ContainerStarted = s.Now.Add(-startedAgo)
			}
		})}
		return s
	}
	restarted := scope(3*time.Second, true)
	restarted.Etcd.HealthySeen = map[uint64]time.Time{2: restarted.Now.Add(-time.Minute)}
	if got := Next(restarted); got.Kind != KindWait || !strings.Contains(got.Message, "once b is Ready") {
		t.Errorf("voter b healthy a minute ago, restarted 3 s ago: Next = %+v, want a quiet wait naming b", got)
	}
	got := Next(scope(3*time.Second, true))
	if got.Kind != KindWait || got.Reason != ReasonScalingUp || !strings.Contains(got.Message, "once b is Ready") {
		t.Errorf("voter b started 3 s ago: Next = %+v, want a quiet wait naming b", got)
	}
	// Right after the promotion, etcd lists b started while the Pod's status in the cache does
	// not show its container running yet: still starting, no warning (seen in every bootstrap on
	// the local cluster, which emitted QuorumGateBlocked and then QuorumLost Warnings).
	lagging := scope(0, false)
	lagging.Etcd.StartedSeen = map[uint64]time.Time{2: lagging.Now.Add(-time.Second)}
	if got := Next(lagging); got.Kind != KindWait || !strings.Contains(got.Message, "once b is Ready") {
		t.Errorf("voter b listed started 1 s ago, Pod status lagging: Next = %+v, want a quiet wait naming b", got)
	}
	// A staged member's container (the guard) started long before its etcd, which etcd lists
	// started only since its add a moment ago: still starting.
	staged := scope(2*time.Minute, true)
	staged.Etcd.StartedSeen = map[uint64]time.Time{2: staged.Now.Add(-time.Second)}
	if got := Next(staged); got.Kind != KindWait || !strings.Contains(got.Message, "once b is Ready") {
		t.Errorf("voter b's container up 2 min, etcd listed it started 1 s ago: Next = %+v, want a quiet wait naming b", got)
	}
	longAgo := scope(0, false)
	longAgo.Etcd.StartedSeen = map[uint64]time.Time{2: longAgo.Now.Add(-2 * time.Minute)}
	// A voter that served since it started and is down now is a fault, however recent its
	// start (an integration run saw a quiet wait for a stopped voter listed 40 s before).
	served := scope(0, false)
	served.Etcd.StartedSeen = map[uint64]time.Time{2: served.Now.Add(-40 * time.Second)}
	served.Etcd.HealthySeen = map[uint64]time.Time{2: served.Now.Add(-10 * time.Second)}
	servedPod := scope(30*time.Second, true)
	servedPod.Etcd.HealthySeen = map[uint64]time.Time{2: servedPod.Now.Add(-5 * time.Second)}
	for name, s := range map[string]Scope{
		"started 2 min ago":                 scope(2*time.Minute, true),
		"Pod not running":                   scope(3*time.Second, false),
		"start time unknown":                scope(0, true),
		"listed started 2 min ago, no Pod":  longAgo,
		"listed 40 s ago, healthy since":    served,
		"container 30 s ago, healthy since": servedPod,
	} {
		if got := Next(s); got.Kind != KindBlocked || got.Reason != ReasonWaitingForHealthyMembers {
			t.Errorf("%s: Next = %+v, want Blocked/WaitingForHealthyMembers", name, got)
		}
	}
}

// TestWaitForPodNamesTheCause: while the seed's Pod does not run, the wait quotes what the
// member's Ready condition says (the scheduler's reason), so the cluster's Progressing message
// names the cause without a look at the EtcdMember.
func TestWaitForPodNamesTheCause(t *testing.T) {
	t.Parallel()
	seed := with(mem("s", 1), func(m *Member) {
		m.Bootstrap, m.PodRunning, m.PodReady, m.Ready = true, false, false, false
		m.NotReadyMessage = "pod phase: Pending; unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"
	})
	got := Next(Scope{Target: 3, Members: []Member{seed}})
	if got.Kind != KindWait || got.Message != "waiting for the Pod of seed s to run: "+seed.NotReadyMessage {
		t.Errorf("Next = %+v, want a wait quoting the member's Ready message", got)
	}
}

// TestReplaceMemberWhoseDataCannotServe: a member whose data is gone or wrong is removed
// through the quorum gate, one at a time, and only for the reasons that cannot heal in place.
func TestReplaceMemberWhoseDataCannotServe(t *testing.T) {
	t.Parallel()
	lost := func(s Scope, name, reason string) Scope {
		for i := range s.Members {
			if s.Members[i].Name == name {
				s.Members[i].Unhealthy, s.Members[i].HealthyReason, s.Members[i].HealthyMessage = true, reason, "the data is gone"
				s.Members[i].PodRunning, s.Members[i].PodReady, s.Members[i].Ready = false, false, false
			}
		}
		return s
	}
	got := Next(lost(steady3(), "b", health.ReasonDataLost))
	if got.Kind != KindRemove || got.Member != "b" || got.RemovalReason != health.ReasonDataLost || got.Reason != ReasonReplacingMember || got.MemberID != 2 {
		t.Errorf("b DataLost: Next = %+v, want the quorum-gated removal of b for replacement", got)
	}
	for _, reason := range []string{health.ReasonCrashLoop, health.ReasonNodeLost, health.ReasonDataCorrupt, health.ReasonRemovedFromCluster} {
		s := lost(steady3(), "b", reason)
		delete(s.Etcd.Statuses, 2) // down: it does not answer
		if got := Next(s); got.Kind != KindRemove || got.RemovalReason != reason {
			t.Errorf("b %s: Next = %+v, want b replaced", reason, got)
		}
	}
	// A crash loop or a lost node whose member answers etcd again: back, with its data.
	for _, reason := range []string{health.ReasonCrashLoop, health.ReasonNodeLost} {
		s := lost(steady3(), "b", reason)
		s.Etcd.Statuses[2] = etcdclient.Status{ID: 2, Leader: 1, RaftAppliedIndex: 2}
		if got := Next(s); got.Kind == KindRemove {
			t.Errorf("b %s but answering Status: Next = %+v, want no replacement", reason, got)
		}
	}
	// A template that never ran, an OOM kill and an unschedulable Pod would fail the same way in
	// a new member: reported, never replaced.
	for _, reason := range []string{health.ReasonStartFailed, health.ReasonUnschedulable} {
		if got := Next(lost(steady3(), "b", reason)); got.Kind == KindRemove {
			t.Errorf("b %s: Next = %+v, want no replacement", reason, got)
		}
	}
	// Two of three lost: no quorum, so nothing destructive happens.
	s := lost(lost(steady3(), "b", health.ReasonDataLost), "c", health.ReasonDataLost)
	delete(s.Etcd.Statuses, 2)
	delete(s.Etcd.Statuses, 3)
	if got := Next(s); got.Kind != KindBlocked {
		t.Errorf("b and c DataLost: Next = %+v, want Blocked by the quorum gate", got)
	}
	// The removal in flight (after a crash) keeps saying ReplacingMember, and the replacement
	// member is added only once the old one is gone.
	s = lost(steady3(), "b", health.ReasonDataLost)
	s.Members[1].RemovalReason = health.ReasonDataLost
	if got := Next(s); got.Kind != KindRemove || got.Reason != ReasonReplacingMember {
		t.Errorf("replacement in flight: Next = %+v, want the removal finished as ReplacingMember", got)
	}
	s.Members[1].Deleting = true
	s.Etcd.Members = s.Etcd.Members[:1:1]
	s.Etcd.Members = append(s.Etcd.Members, voter(3, "c"))
	if got := Next(s); got.Kind == KindCreateMember {
		t.Errorf("old member still being deleted: Next = %+v, want a wait, not a new member", got)
	}
	s.Members = []Member{s.Members[0], s.Members[2]}
	if got := Next(s); got.Kind != KindDeletePVC || got.PVC != "data-b" {
		t.Errorf("old member gone: Next = %+v, want its PVC deleted first", got)
	}
	s.PVCs = []PVC{s.PVCs[0], s.PVCs[2]}
	if got := Next(s); got.Kind != KindCreateMember {
		t.Errorf("old member gone: Next = %+v, want the replacement member created", got)
	}
}

func TestReplaceFromEtcdsView(t *testing.T) {
	t.Parallel()
	classified := func(s Scope) Scope {
		s.Members = slices.Clone(s.Members)
		s.ClassifyFromEtcd()
		return s
	}
	// Someone ran `etcdctl member remove` on b, which recorded its ID.
	s := steady3()
	for i := range s.Members {
		s.Members[i].MemberID = uint64(i + 1)
	}
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(3, "c"))
	s = classified(s)
	if m := s.Members[1]; !m.Unhealthy || m.HealthyReason != health.ReasonRemovedFromCluster {
		t.Fatalf("b after an outside MemberRemove: %+v, want Healthy=False/RemovedFromCluster", m)
	}
	if got := Next(s); got.Kind != KindRemove || got.Member != "b" || got.InEtcd || got.RemovalReason != health.ReasonRemovedFromCluster {
		t.Errorf("b removed outside: Next = %+v, want its EtcdMember deleted (no MemberRemove)", got)
	}
	if c := Count(&s); c.Broken != 1 {
		t.Errorf("brokenMembers = %d, want 1", c.Broken)
	}
	// Re-added under the same name by hand: a new ID, no data. The recorded ID still decides.
	s = steady3()
	s.Members[1].MemberID = 2
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(9, "b"), voter(3, "c"))
	if s = classified(s); s.Members[1].HealthyReason != health.ReasonRemovedFromCluster {
		t.Errorf("b re-added with a new ID: %+v, want RemovedFromCluster", s.Members[1])
	}
	// Nothing is concluded while etcd does not answer, for pending members, or for members the
	// operator is removing itself.
	s = steady3()
	s.Members[1].MemberID = 2
	s.Etcd = Etcd{}
	if s = classified(s); s.Members[1].Unhealthy {
		t.Errorf("etcd unknown: b %+v, want no verdict", s.Members[1])
	}
	s = steady3()
	s.Members = append(s.Members, with(mem("d", 4), func(m *Member) { m.Pending = true }))
	s.Members[1].RemovalReason = RemovalReasonScaleDown
	s.Members[1].MemberID = 2
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(3, "c"))
	s = classified(s)
	if s.Members[1].Unhealthy || s.Members[3].Unhealthy {
		t.Errorf("scale-down victim or pending member marked: %+v, %+v", s.Members[1], s.Members[3])
	}

	// A CORRUPT alarm names c: replaced through the gate (c no longer counts healthy, so the
	// removal leaves a and b, a quorum of 2), then the alarm is disarmed.
	s = steady3()
	s.Etcd.Alarms = []etcdclient.Alarm{{MemberID: 3, Type: etcdclient.AlarmCorrupt}}
	s = classified(s)
	if m := s.Members[2]; m.HealthyReason != health.ReasonDataCorrupt {
		t.Fatalf("c with a CORRUPT alarm: %+v, want DataCorrupt", m)
	}
	if got := Next(s); got.Kind != KindRemove || got.Member != "c" || !got.InEtcd || got.RemovalReason != health.ReasonDataCorrupt {
		t.Errorf("c corrupt: Next = %+v, want c removed from etcd", got)
	}
	s = steady3()
	s.Members, s.PVCs = s.Members[:2], s.PVCs[:2]
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"))
	s.Etcd.Alarms = []etcdclient.Alarm{{MemberID: 3, Type: etcdclient.AlarmCorrupt}}
	if got := Next(classified(s)); got.Kind != KindDisarmCorrupt || got.MemberID != 3 {
		t.Errorf("c gone, alarm left: Next = %+v, want its CORRUPT alarm disarmed", got)
	}
}

func TestReplaceOnRequest(t *testing.T) {
	t.Parallel()
	// kubectl etcd replace-member: the replace annotation, with a reason.
	s := steady3()
	s.Members[2].ReplaceAnnotated, s.Members[2].ReplaceRequested = true, "disk is slow"
	got := Next(s)
	if got.Kind != KindRemove || got.Member != "c" || got.RemovalReason != RemovalReasonReplace || !strings.Contains(got.Message, "disk is slow") {
		t.Errorf("replace annotation: Next = %+v, want c replaced, the reason quoted", got)
	}
	// A deletion the operator did not start waits for a person; allow-deletion turns it into
	// a replacement.
	s = steady3()
	s.Members[0].Deleting = true
	if got := Next(s); got.Kind == KindRemove {
		t.Errorf("foreign deletion without allow-deletion: Next = %+v, want no removal", got)
	}
	s.Members[0].AllowDeletion = true
	if got := Next(s); got.Kind != KindMoveLeader || got.Member != "a" || got.Reason != ReasonReplacingMember {
		t.Errorf("allow-deletion on the leader: Next = %+v, want leadership moved away from a first", got)
	}
	s.Etcd.Leader = 2
	if got := Next(s); got.Kind != KindRemove || got.Member != "a" || got.RemovalReason != RemovalReasonDeletionAllowed {
		t.Errorf("allow-deletion: Next = %+v, want a removed as DeletionAllowed", got)
	}
	// ... unless removing it would break quorum: refused, and the message says which deletion
	// waits and why.
	s.Etcd.Statuses = map[uint64]etcdclient.Status{1: s.Etcd.Statuses[1], 2: s.Etcd.Statuses[2]}
	s.Members[1].PodReady, s.Members[1].Ready = true, true
	s.Members[2].PodReady, s.Members[2].Ready, s.Members[2].PodRunning = false, false, false
	got = Next(s)
	if got.Kind != KindBlocked || got.Refused != KindRemove || !strings.Contains(got.Message, "allow-deletion") || !strings.Contains(got.Message, "quorum") {
		t.Errorf("allow-deletion without a quorum to spare: Next = %+v, want Blocked naming allow-deletion and quorum", got)
	}
}

func TestOrphanVoterRemovedUnlessItsPVCRemains(t *testing.T) {
	t.Parallel()
	// c's EtcdMember was deleted around its finalizer in a Memory cluster: no PVC, no data.
	s := steady3()
	s.Members, s.PVCs = s.Members[:2], nil
	if got := Next(s); got.Kind != KindRemoveOrphan || got.MemberID != 3 {
		t.Errorf("voter without EtcdMember or PVC: Next = %+v, want it removed", got)
	}
	s.Etcd.FirstSeen[3] = s.Now.Add(-10 * time.Second)
	if got := Next(s); got.Kind != KindWait || got.MemberID != 3 {
		t.Errorf("voter seen 10s ago: Next = %+v, want a wait for orphanMemberGrace", got)
	}
	// With its PVC, its data may be the cluster's: never removed as an orphan.
	s = steady3()
	s.Members = s.Members[:2]
	if got := Next(s); got.Kind == KindRemoveOrphan {
		t.Errorf("voter whose PVC remains: Next = %+v, want no removal", got)
	}
}

func TestAllMemoryMembersLost(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Memory, s.PVCs = true, nil
	for i := range s.Members {
		s.Members[i].Unhealthy, s.Members[i].HealthyReason = true, health.ReasonDataLost
		s.Members[i].PodRunning, s.Members[i].PodReady, s.Members[i].Ready = false, false, false
	}
	s.Etcd = Etcd{}
	if !AllMembersLost(&s) {
		t.Errorf("every Memory member DataLost: AllMembersLost false")
	}
	if got := Next(s); got.Mutates() {
		t.Errorf("every Memory member lost: Next = %+v, want nothing done", got)
	}
	s.Memory = false
	if AllMembersLost(&s) {
		t.Errorf("PVC members with wiped data: AllMembersLost true, want QuorumLost")
	}
	conds := Conditions(ConditionInput{Scope: &s, Action: Next(s)})
	for _, c := range conds {
		if c.Type == "Degraded" && !strings.Contains(c.Message, "restore from a snapshot") {
			t.Errorf("every data dir lost: Degraded %q, want a restore recommended", c.Message)
		}
	}
}

func TestReplacementBackoff(t *testing.T) {
	t.Parallel()
	// d, added as a learner to replace a lost member, never starts.
	failed := func(s Scope, created time.Time) Scope {
		s.Members = append(slices.Clone(s.Members), with(mem("d", 0), func(m *Member) {
			m.Created, m.Ready, m.PodReady = created, false, false
			m.Unhealthy, m.HealthyReason, m.HealthyMessage = true, health.ReasonStartFailed, "the Pod has not become Ready"
		}))
		s.Etcd.Members = append(slices.Clone(s.Etcd.Members), learner(4, "d", false))
		return s
	}
	s := failed(steady3(), t0)
	got := Next(s)
	if got.Kind != KindBackoff || got.Backoff.Attempts != 1 || !got.Backoff.NotBefore.Equal(s.Now.Add(5*time.Minute)) {
		t.Fatalf("first member that never started: Next = %+v, want a 5m back-off recorded", got)
	}
	s.Backoff = got.Backoff
	s.Now = s.Now.Add(time.Minute)
	if got := Next(s); got.Kind != KindWait || got.RequeueAfter != 4*time.Minute {
		t.Errorf("inside the back-off: Next = %+v, want a 4m wait", got)
	}
	var degraded string
	for _, c := range Conditions(ConditionInput{Scope: &s, Action: Next(s)}) {
		if c.Type == "Degraded" {
			degraded = c.Reason
		}
	}
	if degraded != ReasonReplacementBackoff {
		t.Errorf("inside the back-off: Degraded reason %q, want ReplacementBackoff", degraded)
	}
	s.Now = s.Now.Add(5 * time.Minute)
	if got := Next(s); got.Kind != KindRemove || got.Member != "d" || got.RemovalReason != health.ReasonStartFailed {
		t.Errorf("back-off over: Next = %+v, want d removed for replacement", got)
	}
	// Its successor fails too: created after the back-off ended, it doubles the wait, up to 1h.
	s2 := failed(steady3(), s.Now.Add(time.Minute))
	s2.Backoff, s2.Now = s.Backoff, s.Now.Add(10*time.Minute)
	if got := Next(s2); got.Kind != KindBackoff || got.Backoff.Attempts != 2 || got.RequeueAfter != 10*time.Minute {
		t.Errorf("second member in a row that never started: Next = %+v, want a 10m back-off", got)
	}
	for attempts, want := range map[int32]time.Duration{1: 5 * time.Minute, 3: 20 * time.Minute, 4: 40 * time.Minute, 5: time.Hour, 30: time.Hour} {
		if got := BackoffFor(attempts); got != want {
			t.Errorf("BackoffFor(%d) = %s, want %s", attempts, got, want)
		}
	}
	// A learner that started is catching up, however long it takes: never replaced.
	s = failed(steady3(), t0)
	s.Etcd.Members[3] = learner(4, "d", true)
	if got := Next(s); got.Kind == KindRemove || got.Kind == KindBackoff {
		t.Errorf("started learner StartFailed: Next = %+v, want no replacement", got)
	}
	// A voter whose new template fails to start is a halted roll: never replaced.
	s = steady3()
	s.Members[1].Unhealthy, s.Members[1].HealthyReason = true, health.ReasonStartFailed
	if got := Next(s); got.Kind == KindRemove || got.Kind == KindBackoff {
		t.Errorf("voter StartFailed: Next = %+v, want no replacement", got)
	}
}

func TestForeignPVCNeverDeleted(t *testing.T) {
	t.Parallel()
	// data-old was left under reclaimPolicy Retain by an earlier cluster of the same name: etcd
	// does not list its member and no EtcdMember names it, yet it is not this cluster's data.
	s := steady3()
	s.PVCs = append(s.PVCs, PVC{Name: "data-old", Member: "old", MemberUID: "uid-old", Foreign: true})
	if got := Next(s); got.Kind == KindDeletePVC {
		t.Errorf("foreign PVC: Next = %+v, want it left alone", got)
	}
	s.PVCs[3].Foreign = false
	if got := Next(s); got.Kind != KindDeletePVC || got.PVC != "data-old" {
		t.Errorf("this cluster's orphan PVC: Next = %+v, want it deleted", got)
	}
}

func TestHeldDeletionsKeepRunning(t *testing.T) {
	t.Parallel()
	// kubectl delete etcdmember --all: every deletion is held by the finalizer, every member
	// keeps serving, and nothing is added or removed.
	s := steady3()
	for i := range s.Members {
		s.Members[i].Deleting = true
	}
	if got := Next(s); got.Kind != KindNone || got.Reason != ReasonReconciled {
		t.Errorf("every deletion held: Next = %+v, want nothing to do", got)
	}
	if c := Count(&s); c.ReadyVoters != 3 {
		t.Errorf("every deletion held: %d Ready voters, want 3", c.ReadyVoters)
	}
}
