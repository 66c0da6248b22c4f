package membership

import (
	"strings"
	"testing"
	"time"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
)

// pendingMember is a member created for a scale-up, with no initial cluster yet.
func pendingMember(name string, age int) Member {
	return with(mem(name, age), func(m *Member) {
		m.Pending, m.Ready, m.PodRunning, m.PodReady, m.VoterHint, m.Updated = true, false, false, false, false, false
		m.Spec = &etcdv1alpha2.EtcdMemberSpec{}
	})
}

// stagedMember is a member staged with initialCluster ic: its Pod runs the guard, which waits.
func stagedMember(name string, age int, ic string) Member {
	return with(mem(name, age), func(m *Member) {
		m.Ready, m.PodReady, m.VoterHint = false, false, false
		m.Spec = &etcdv1alpha2.EtcdMemberSpec{InitialCluster: ic}
	})
}

// seedOnly is a formed 1-voter cluster growing to 3, with staging on.
func seedOnly() Scope {
	s := Scope{Target: 3, ClusterID: "cid", Now: t0.Add(time.Hour), Staging: true,
		Members: []Member{mem("a", 1)}, Etcd: healthyEtcd(1, voter(1, "a"))}
	s.Members[0].MemberID = 1
	return s
}

// TestStagingPreparesTheNextMemberWhileTheSeedStarts: right after the cluster ID is latched the
// seed is not Ready yet, so the add must wait; with staging, the next member is created in the
// meantime, not after.
func TestStagingPreparesTheNextMemberWhileTheSeedStarts(t *testing.T) {
	t.Parallel()
	s := seedOnly()
	s.Members[0].Ready, s.Members[0].PodReady = false, false
	s.Members[0].ContainerStarted = s.Now.Add(-time.Second)
	got := Next(s)
	if got.Kind != KindCreateMember || !strings.Contains(got.Message, "meanwhile preparing member 2 of 3") {
		t.Errorf("Next = %+v, want the member created while the seed starts", got)
	}
	s.Staging = false
	if got := Next(s); got.Kind != KindWait {
		t.Errorf("without staging: Next = %+v, want a wait", got)
	}
}

func TestPendingMemberIsStagedWithTheMembershipPlusItself(t *testing.T) {
	t.Parallel()
	s := seedOnly()
	s.Members = append(s.Members, pendingMember("b", 2))
	got := Next(s)
	want := "a=" + peer("a") + ",b=" + peer("b")
	if got.Kind != KindStage || got.Member != "b" || got.InitialCluster != want {
		t.Errorf("Next = %+v, want b staged with %s", got, want)
	}
	s.Staging = false
	if got := Next(s); got.Kind != KindJoin {
		t.Errorf("without staging: Next = %+v, want the plain join (add and patch)", got)
	}
}

func TestStagedMemberIsAddedWhenTheGateAllows(t *testing.T) {
	t.Parallel()
	s := seedOnly()
	s.Members = append(s.Members, stagedMember("b", 2, "a="+peer("a")+",b="+peer("b")))
	got := Next(s)
	if got.Kind != KindJoin || got.Member != "b" || got.InEtcd || got.Gate == nil || !got.Gate.Allowed {
		t.Errorf("Next = %+v, want an allowed add of staged b", got)
	}
	// Staged members are not taken for members etcd removed: they were never in it.
	c := classify(s)
	if m := c.Members[1]; m.Unhealthy {
		t.Errorf("staged b classified %s: %s", m.HealthyReason, m.HealthyMessage)
	}
}

// TestStagedMemberWaitsBehindALearner: a learner in flight is promoted first; the staged member
// does not hold it back.
func TestStagedMemberWaitsBehindALearner(t *testing.T) {
	t.Parallel()
	s := Scope{Target: 3, ClusterID: "cid", Now: t0.Add(time.Hour), Staging: true,
		Members: []Member{mem("a", 1), with(mem("b", 2), func(m *Member) { m.Ready, m.PodReady, m.VoterHint = false, false, false }),
			stagedMember("c", 3, "a="+peer("a")+",b="+peer("b")+",c="+peer("c"))},
		Etcd: healthyEtcd(1, voter(1, "a"), learner(2, "b", true))}
	if got := Next(s); got.Kind != KindPromote || got.Member != "b" {
		t.Errorf("Next = %+v, want b promoted first", got)
	}
}

// TestStaleStagedMemberIsRemoved: etcd's membership changed after c was staged (b was removed),
// so c's --initial-cluster no longer matches and etcd would refuse to start it: it goes, never
// having been added.
func TestStaleStagedMemberIsRemoved(t *testing.T) {
	t.Parallel()
	s := seedOnly()
	s.Members = append(s.Members, stagedMember("c", 3, "a="+peer("a")+",b="+peer("b")+",c="+peer("c")))
	got := Next(s)
	if got.Kind != KindRemove || got.Member != "c" || got.InEtcd || got.RemovalReason != RemovalReasonRestage {
		t.Errorf("Next = %+v, want stale staged c removed without a MemberRemove", got)
	}
}

// TestStagingPreparesWhileALearnerStarts: 3 → 5: while the fourth member's learner has not
// started, the fifth is created, so its Pod starts before its add.
func TestStagingPreparesWhileALearnerStarts(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Target, s.Staging = 5, true
	s.Members = append(s.Members, with(mem("d", 4), func(m *Member) { m.Ready, m.PodReady, m.PodRunning, m.VoterHint = false, false, false, false }))
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), learner(4, "d", false))
	got := Next(s)
	if got.Kind != KindCreateMember || !strings.Contains(got.Message, "waiting for learner d to start; meanwhile preparing member 5 of 5") {
		t.Errorf("Next = %+v, want member 5 prepared while d starts", got)
	}
	// Never while a member is failing: a failing cluster does not get more members to start.
	s.Members[0].Unhealthy, s.Members[0].HealthyReason = true, health.ReasonCrashLoop
	if got, ok := prepareNext(&s, Action{Kind: KindWait}); ok {
		t.Errorf("prepareNext with a crash-looping member = %+v", got)
	}
}

// seedStarting is a bootstrap whose seed has its initial cluster and whose Pod is not running
// yet, growing to 3 with staging on.
func seedStarting() Scope {
	seed := with(mem("s", 1), func(m *Member) {
		m.Bootstrap, m.PodRunning, m.PodReady, m.Ready, m.VoterHint = true, false, false, false, false
	})
	return Scope{Target: 3, Now: t0.Add(time.Hour), Staging: true, Members: []Member{seed}}
}

// TestBootstrapPreparesTheSecondMemberWhileTheSeedStarts: the second member's Pod starts while
// the seed's does, staged with the seed's membership; the cluster ID is still latched from the
// seed alone, and the second member is added only after.
func TestBootstrapPreparesTheSecondMemberWhileTheSeedStarts(t *testing.T) {
	t.Parallel()
	s := seedStarting()
	if got := Next(s); got.Kind != KindCreateMember || got.Reason != ReasonBootstrapping || !strings.Contains(got.Message, "meanwhile preparing member 2 of 3") {
		t.Fatalf("seed starting: Next = %+v, want the second member created", got)
	}
	s.Members = append(s.Members, pendingMember("b", 2))
	want := "b=" + peer("b") + ",s=" + peer("s")
	if got := Next(s); got.Kind != KindStage || got.Member != "b" || got.InitialCluster != want {
		t.Fatalf("second member pending: Next = %+v, want b staged with %s", got, want)
	}
	s.Members[1] = stagedMember("b", 2, want)
	if got := Next(s); got.Kind != KindWait || got.Reason != ReasonWaitingForSeed {
		t.Errorf("second member staged, seed not running: Next = %+v, want the wait for the seed", got)
	}
	s.Members[0].PodRunning = true
	s.Etcd = healthyEtcd(1, voter(1, "s"))
	if got := Next(s); got.Kind != KindLatchClusterID {
		t.Errorf("seed answering alone: Next = %+v, want the cluster ID latched", got)
	}
	s.Staging = false
	s.Members, s.Etcd = s.Members[:1], Etcd{}
	s.Members[0].PodRunning = false
	if got := Next(s); got.Kind != KindWait {
		t.Errorf("without staging: Next = %+v, want a wait", got)
	}
}

// TestBootstrapRefusesAnyOtherJoinedMember: a member etcd lists besides the seed, or two
// prepared members, are not what a bootstrap produces: it waits for a person.
func TestBootstrapRefusesAnyOtherJoinedMember(t *testing.T) {
	t.Parallel()
	s := seedStarting()
	s.Members[0].PodRunning = true
	s.Members = append(s.Members, stagedMember("b", 2, "b="+peer("b")+",s="+peer("s")), stagedMember("c", 3, "c="+peer("c")+",s="+peer("s")))
	if got := Next(s); got.Kind != KindWait || !strings.Contains(got.Message, "exactly one seed member") {
		t.Errorf("two prepared members: Next = %+v, want the bootstrap refused", got)
	}
	s.Members = s.Members[:2]
	s.Etcd = healthyEtcd(1, voter(1, "s"), voter(2, "b"))
	if got := Next(s); got.Kind != KindWait || !strings.Contains(got.Message, "exactly one seed member") {
		t.Errorf("b in etcd before the latch: Next = %+v, want the bootstrap refused", got)
	}
}

// TestResumePreparesTheNextMemberWhileTheWokenOneStarts: right after a wake etcd cannot answer,
// and before staging the second member waited for it; now it is created and staged with the
// woken member's membership while the woken Pod starts, and added once etcd answers (e2e
// TestLifecycleTimings: the woken member took about 1.8 s to answer, all of it on resume's
// critical path).
func TestResumePreparesTheNextMemberWhileTheWokenOneStarts(t *testing.T) {
	t.Parallel()
	s := seedOnly()
	s.Etcd = Etcd{}
	s.Members[0].Ready, s.Members[0].PodReady, s.Members[0].PodRunning = false, false, false
	if got := Next(s); got.Kind != KindCreateMember || !strings.Contains(got.Message, "meanwhile preparing member 2 of 3") {
		t.Fatalf("woken member starting: Next = %+v, want the second member created", got)
	}
	s.Members = append(s.Members, pendingMember("b", 2))
	want := "a=" + peer("a") + ",b=" + peer("b")
	if got := Next(s); got.Kind != KindStage || got.Member != "b" || got.InitialCluster != want {
		t.Fatalf("second member pending: Next = %+v, want b staged with %s", got, want)
	}
	s.Members[1] = stagedMember("b", 2, want)
	if got := Next(s); got.Kind != KindWait {
		t.Errorf("second member staged, etcd silent: Next = %+v, want a wait", got)
	}
	s.Members[0].Ready, s.Members[0].PodReady, s.Members[0].PodRunning = true, true, true
	s.Etcd = healthyEtcd(1, voter(1, "a"))
	if got := Next(s); got.Kind != KindJoin || got.Member != "b" {
		t.Errorf("woken member answering: Next = %+v, want b added", got)
	}
	s.Members, s.Etcd, s.Staging = s.Members[:1], Etcd{}, false
	if got := Next(s); got.Kind != KindWait {
		t.Errorf("without staging: Next = %+v, want a wait", got)
	}
	s.Staging = true
	s.Members[0].Unhealthy = true
	if got := Next(s); got.Kind != KindWait {
		t.Errorf("the only member unhealthy: Next = %+v, want a wait, not a new member", got)
	}
}
