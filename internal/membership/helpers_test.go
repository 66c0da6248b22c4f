package membership

import (
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func peer(name string) string { return "http://" + name + ".c.ns.svc:2380" }

// mem is a running, Ready, updated member.
func mem(name string, age int) Member {
	return Member{Name: name, UID: "uid-" + name, Created: t0.Add(time.Duration(age) * time.Minute), PeerURL: peer(name),
		Ready: true, Updated: true, TemplateCurrent: true, PodRunning: true, PodReady: true, VoterHint: true}
}

func with(m Member, f func(*Member)) Member { f(&m); return m }

// voter is a started etcd voter for member name with ID id.
func voter(id uint64, name string) etcdclient.Member {
	return etcdclient.Member{ID: id, Name: name, PeerURLs: []string{peer(name)}, ClientURLs: []string{"http://10.0.0.1:2379"}}
}

func learner(id uint64, name string, started bool) etcdclient.Member {
	e := voter(id, name)
	e.IsLearner = true
	if !started {
		e.Name, e.ClientURLs = "", nil
	}
	return e
}

// healthyEtcd builds a known etcd view where every listed member answered Status; leader leads.
func healthyEtcd(leader uint64, ms ...etcdclient.Member) Etcd {
	e := Etcd{Known: true, Members: ms, Leader: leader, Statuses: map[uint64]etcdclient.Status{}, FirstSeen: map[uint64]time.Time{}}
	for _, m := range ms {
		if m.Started() {
			e.Statuses[m.ID] = etcdclient.Status{ID: m.ID, Leader: leader, IsLearner: m.IsLearner, RaftAppliedIndex: m.ID}
		}
		e.FirstSeen[m.ID] = t0
	}
	return e
}

// steady3 is a converged 3-member cluster a, b, c (a leads).
func steady3() Scope {
	return Scope{
		Target: 3, ClusterID: "cid", Now: t0.Add(time.Hour),
		Members: []Member{mem("a", 1), mem("b", 2), mem("c", 3)},
		Etcd:    healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c")),
		PVCs:    []PVC{{Name: "data-a", Member: "a", MemberUID: "uid-a"}, {Name: "data-b", Member: "b", MemberUID: "uid-b"}, {Name: "data-c", Member: "c", MemberUID: "uid-c"}},
	}
}
