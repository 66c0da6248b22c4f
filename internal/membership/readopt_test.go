package membership

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// dataPVC is member name's PVC as the member controller made it, naming the member by UID.
func dataPVC(name string) PVC {
	return PVC{Name: "data-" + name, Member: name, MemberUID: "uid-" + name, PeerURL: peer(name)}
}

// recreated marks a PVC whose member was re-created under its name.
func recreated(p PVC) PVC { p.MemberRecreated = true; return p }

// readoptedMem is member name re-created for its PVC: new UID, no Pod yet.
func readoptedMem(name string, now time.Time) Member {
	return with(mem(name, 0), func(m *Member) {
		m.UID, m.Created = "uid2-"+name, now
		m.Ready, m.PodRunning, m.PodReady, m.Updated = false, false, false, false
	})
}

// lost3 is steady3 after every EtcdMember was force-deleted: the PVCs remain, no Pod runs, so
// etcd does not answer.
func lost3() Scope {
	s := steady3()
	s.Members = nil
	s.Etcd = Etcd{}
	s.PVCs = []PVC{dataPVC("a"), dataPVC("b"), dataPVC("c")}
	return s
}

// without is s after member name was force-deleted (its finalizer stripped): etcd still lists
// it, its PVC remains, its Pod is gone.
func without(s Scope, name string) Scope {
	s.PVCs = []PVC{dataPVC("a"), dataPVC("b"), dataPVC("c")}
	var kept []Member
	for _, m := range s.Members {
		if m.Name != name {
			kept = append(kept, m)
		}
	}
	s.Members = kept
	delete(s.Etcd.Statuses, map[string]uint64{"a": 1, "b": 2, "c": 3}[name])
	return s
}

// compareReadopt compares the fields a re-adoption is made of.
var compareReadopt = cmpopts.IgnoreFields(Action{}, "Message", "Gate", "Refused", "RequeueAfter", "PeerURL", "ClusterID", "RemovalReason")

func TestReadopt(t *testing.T) {
	t.Parallel()
	allPeers := "a=" + peer("a") + ",b=" + peer("b") + ",c=" + peer("c")
	cases := []struct {
		name  string
		scope func() Scope
		want  Action
	}{
		{"etcd lists the member: its EtcdMember is re-created with its ID", func() Scope { return without(steady3(), "c") },
			Action{Kind: KindReadopt, Member: "c", PVC: "data-c", MemberID: 3, InEtcd: true, InitialCluster: allPeers,
				Readopt: Readopt{Create: true, Voter: true}, Reason: ReasonReplacingMember}},
		{"etcd lists it as a learner: re-adopted as a learner, not removed as an orphan", func() Scope {
			s := without(steady3(), "c")
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), learner(3, "c", true))
			return s
		}, Action{Kind: KindReadopt, Member: "c", PVC: "data-c", MemberID: 3, InEtcd: true, InitialCluster: allPeers,
			Readopt: Readopt{Create: true}, Reason: ReasonReplacingMember}},
		{"etcd lists it unstarted: matched by the name in its peer URL", func() Scope {
			s := without(steady3(), "c")
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), learner(3, "c", false))
			return s
		}, Action{Kind: KindReadopt, Member: "c", PVC: "data-c", MemberID: 3, InEtcd: true, InitialCluster: allPeers,
			Readopt: Readopt{Create: true}, Reason: ReasonReplacingMember}},
		{"etcd does not list the member: its PVC is deleted", func() Scope {
			s := without(steady3(), "c")
			s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"))
			return s
		}, Action{Kind: KindDeletePVC, Member: "c", PVC: "data-c", Reason: ReasonScalingDown}},
		{"etcd lists it under another peer URL: left alone, not re-created nor deleted", func() Scope {
			s := without(steady3(), "c")
			s.PVCs[2].PeerURL = "https://c.c.ns.svc:2380"
			return s
		}, Action{Kind: KindCreateMember, Reason: ReasonScalingUp}},
		{"a PVC of an earlier cluster of the same name is never re-adopted", func() Scope {
			s := without(steady3(), "c")
			s.PVCs[2].Foreign = true
			return s
		}, Action{Kind: KindCreateMember, Reason: ReasonScalingUp}},
		{"a PVC without member-uid was not the operator's: not re-adopted", func() Scope {
			s := without(steady3(), "c")
			s.PVCs[2].MemberUID = ""
			return s
		}, Action{Kind: KindCreateMember, Reason: ReasonScalingUp}},
		{"a PVC being deleted is not re-adopted", func() Scope {
			s := without(steady3(), "c")
			s.PVCs[2].Deleting = true
			return s
		}, Action{Kind: KindCreateMember, Reason: ReasonScalingUp}},
		{"crash after the create: the member exists, the PVC still names the old one", func() Scope {
			s := without(steady3(), "c")
			s.Members = append(s.Members, readoptedMem("c", s.Now))
			s.PVCs[2] = recreated(s.PVCs[2])
			return s
		}, Action{Kind: KindReadopt, Member: "c", PVC: "data-c", MemberID: 3, InEtcd: true, Readopt: Readopt{Voter: true}, Reason: ReasonReplacingMember}},
		{"a member made afresh under an old PVC's name does not take its data", func() Scope {
			s := without(steady3(), "c")
			s.Members = append(s.Members, readoptedMem("c", s.Now))
			return s
		}, Action{Kind: KindNone, Reason: ReasonReconciled}},
		{"a pending member named like an old PVC does not take its data", func() Scope {
			s := without(steady3(), "c")
			s.Members = append(s.Members, with(readoptedMem("c", s.Now), func(m *Member) { m.Pending = true }))
			s.PVCs[2] = recreated(s.PVCs[2])
			return s
		}, Action{Kind: KindJoin, Member: "c", InEtcd: true, InitialCluster: allPeers, Reason: ReasonScalingUp}},
		{"a member being removed is not given the PVC", func() Scope {
			s := without(steady3(), "c")
			s.Members = append(s.Members, with(readoptedMem("c", s.Now), func(m *Member) { m.RemovalReason = RemovalReasonScaleDown }))
			s.PVCs[2] = recreated(s.PVCs[2])
			return s
		}, Action{Kind: KindRemove, Member: "c", MemberID: 3, InEtcd: true, Reason: ReasonScalingDown}},
		{"re-adopted member with its PVC: converged again", func() Scope {
			s := steady3()
			s.Members[2] = with(mem("c", 0), func(m *Member) { m.UID, m.Created = "uid2-c", s.Now })
			s.PVCs = []PVC{dataPVC("a"), dataPVC("b"), with2(recreated(dataPVC("c")), func(p *PVC) { p.MemberUID = "uid2-c" })}
			return s
		}, Action{Kind: KindNone, Reason: ReasonReconciled}},
		{"no members, etcd unreachable, cluster ID latched: the first PVC, initialCluster from all PVCs", lost3,
			Action{Kind: KindReadopt, Member: "a", PVC: "data-a", InitialCluster: allPeers, Readopt: Readopt{Create: true}, Reason: ReasonReplacingMember}},
		{"no members and a paused cluster: re-adopted dormant", func() Scope {
			s := lost3()
			s.Target = 0
			s.PVCs = s.PVCs[:1]
			return s
		}, Action{Kind: KindReadopt, Member: "a", PVC: "data-a", InitialCluster: "a=" + peer("a"), Readopt: Readopt{Create: true, Dormant: true}, Reason: ReasonReplacingMember}},
		{"paused with its one member back: a leftover PVC is not re-adopted too", func() Scope {
			s := lost3()
			s.Target = 0
			s.Members = []Member{with(readoptedMem("a", s.Now), func(m *Member) { m.Dormant = true })}
			s.PVCs[0] = with2(recreated(s.PVCs[0]), func(p *PVC) { p.MemberUID = "uid2-a" })
			return s
		}, Action{Kind: KindNone, Reason: ReasonPaused}},
		{"cluster ID not latched: nothing is re-adopted", func() Scope {
			s := lost3()
			s.ClusterID = ""
			return s
		}, Action{Kind: KindCreateSeed, Reason: ReasonWaitingForSeed}},
		{"cluster ID not latched, etcd answers: nothing is re-adopted", func() Scope {
			s := without(steady3(), "c")
			s.ClusterID = ""
			return s
		}, Action{Kind: KindWait, Reason: ReasonBootstrapping}},
		{"etcd unreachable but members created afresh exist: quorum lost, wait", func() Scope {
			s := without(steady3(), "c")
			s.Etcd = Etcd{}
			return s
		}, Action{Kind: KindWait, Reason: ReasonScalingUp}},
		{"etcd unreachable, no members, only PVCs of an earlier cluster: nothing", func() Scope {
			s := lost3()
			for i := range s.PVCs {
				s.PVCs[i].Foreign = true
			}
			return s
		}, Action{Kind: KindWait, Reason: ReasonScalingUp}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Next(tc.scope())
			if diff := cmp.Diff(tc.want, got, compareReadopt); diff != "" {
				t.Errorf("Next() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
		})
	}
}

func with2(p PVC, f func(*PVC)) PVC { f(&p); return p }

// TestReadoptAllOnePerPass plays the total-loss flow pass by pass: with no EtcdMember and etcd
// silent, each pass re-adopts one PVC (the previous pass's member then has a PVC older than
// itself) until every PVC has its member back; when etcd answers midway, the rest follow its
// member list, and nothing is ever deleted.
func TestReadoptAllOnePerPass(t *testing.T) {
	t.Parallel()
	for _, etcdAnswersAfter := range []int{3, 2} {
		s := lost3()
		var got []string
		for pass := 0; pass < 10; pass++ {
			if pass == etcdAnswersAfter {
				s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"))
			}
			a := Next(s)
			if a.Kind != KindReadopt {
				break
			}
			if !a.Readopt.Create {
				t.Fatalf("pass %d: %+v, want a create (the previous pass rewrote its PVC)", pass, a)
			}
			if s.Etcd.Known != a.InEtcd {
				t.Errorf("pass %d: InEtcd %v while etcd known %v", pass, a.InEtcd, s.Etcd.Known)
			}
			got = append(got, a.Member)
			// The executor: create the member, rewrite its PVC; its Pod starts.
			s.Now = s.Now.Add(time.Second)
			m := readoptedMem(a.Member, s.Now)
			s.Members = append(s.Members, m)
			for i := range s.PVCs {
				if s.PVCs[i].Name == a.PVC {
					s.PVCs[i].MemberUID, s.PVCs[i].MemberRecreated = m.UID, true
				}
			}
		}
		if want := []string{"a", "b", "c"}; !cmp.Equal(got, want) {
			t.Errorf("etcd answering after %d passes: re-adopted %v, want %v", etcdAnswersAfter, got, want)
		}
	}
}

// While members wait to be re-adopted, Degraded says so: they hold the data but serve nothing.
// A replaced member's PVC on its way out (etcd no longer lists the member) is not one of them.
func TestDegradedWhileReadopting(t *testing.T) {
	t.Parallel()
	replaced := without(steady3(), "c")
	replaced.Etcd.Members = replaced.Etcd.Members[:2]
	for _, tc := range []struct {
		name       string
		scope      Scope
		wantReason string
		wantNames  string
	}{
		{"every EtcdMember gone, etcd silent", lost3(), ReasonMembersUnhealthy, "a, b, c"},
		{"one EtcdMember gone, etcd lists it", without(steady3(), "c"), ReasonMembersUnhealthy, "re-adopted from their PVCs: c"},
		{"a removed member's PVC", replaced, ReasonQuorumHealthy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.scope
			d := degraded(ConditionInput{Scope: &s})
			if d.Reason != tc.wantReason || !strings.Contains(d.Message, tc.wantNames) {
				t.Errorf("Degraded = %s/%s %q; want %s mentioning %q", d.Status, d.Reason, d.Message, tc.wantReason, tc.wantNames)
			}
		})
	}
}
