package membership

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

func TestToken(t *testing.T) {
	t.Parallel()
	if got, want := Token("ns", "etcd", "1234-abcd"), "ns-etcd-1234-abcd"; got != want {
		t.Errorf("Token = %q, want %q", got, want)
	}
}

func TestURLs(t *testing.T) {
	t.Parallel()
	cases := []struct{ got, want string }{
		{ClientURL("10.1.2.3", false), "http://10.1.2.3:2379"},
		{ClientURL("fd00::1", true), "https://[fd00::1]:2379"},
		{NameFromPeerURL("http://etcd-abcde.etcd.ns.svc:2380"), "etcd-abcde"},
		{NameFromPeerURL("https://m0:2380"), "m0"},
		{NameFromPeerURL("::not a url"), ""},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

func TestInitialCluster(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		members []etcdclient.Member
		want    string
	}{
		{"seed only", []etcdclient.Member{voter(1, "a")}, "a=" + peer("a") + ",new=" + peer("new")},
		{"sorted by name, not by list order", []etcdclient.Member{voter(3, "c"), voter(1, "a"), voter(2, "b")},
			"a=" + peer("a") + ",b=" + peer("b") + ",c=" + peer("c") + ",new=" + peer("new")},
		{"self already added (crash after add) appears once", []etcdclient.Member{voter(1, "a"), learner(9, "new", false)},
			"a=" + peer("a") + ",new=" + peer("new")},
		{"unstarted member named from its URL", []etcdclient.Member{voter(1, "a"), learner(2, "zz", false)},
			"a=" + peer("a") + ",new=" + peer("new") + ",zz=" + peer("zz")},
		{"first persisted peer URL verbatim", []etcdclient.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a.legacy.ns.svc:2380", "http://x:2380"}}},
			"a=http://a.legacy.ns.svc:2380,new=" + peer("new")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := InitialCluster(c.members, "new", peer("new")); got != c.want {
				t.Errorf("InitialCluster = %q, want %q", got, c.want)
			}
		})
	}
	if got, want := SeedInitialCluster("s", peer("s")), "s="+peer("s"); got != want {
		t.Errorf("SeedInitialCluster = %q, want %q", got, want)
	}
}

// TestSeedClusterID checks the derivation against IDs of a real single-member etcd 3.6 cluster
// (etcd --name default, started with its defaults: member 8e9e05c52164694d, cluster
// cdf818194e3a8c32, as printed by `etcdctl member list -w json` and etcd's log).
func TestSeedClusterID(t *testing.T) {
	t.Parallel()
	id, err := etcdclient.ParseID("8e9e05c52164694d")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := SeedClusterID(id), "cdf818194e3a8c32"; got != want {
		t.Errorf("SeedClusterID = %s, want %s", got, want)
	}
}
