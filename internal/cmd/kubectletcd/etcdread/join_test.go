package etcdread_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdread"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

func cr(name, memberID string) etcdv1alpha2.EtcdMember {
	return etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name},
		Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: "demo"},
		Status:     etcdv1alpha2.EtcdMemberStatus{MemberID: memberID},
	}
}

// row summarises a pair as "CR|etcd ID|orphan".
func row(p etcdread.Pair) string {
	name, id := "-", "-"
	if p.CR != nil {
		name = p.CR.Name
	}
	if p.Etcd != nil {
		id = p.Etcd.IDHex()
	}
	return name + "|" + id + "|" + p.Orphan()
}

func TestJoinFlagsOrphansBothWays(t *testing.T) {
	t.Parallel()
	crs := []etcdv1alpha2.EtcdMember{
		cr("demo-a", "a"),     // matched by peer URL, before it started (no name)
		cr("demo-b", "b"),     // matched by name
		cr("demo-gone", "99"), // removed from etcd: orphan
		cr("demo-new", ""),    // not added yet: not an orphan
	}
	list := []etcdclient.Member{
		{ID: 0xf0, Name: "stray"},
		{ID: 0xb, Name: "demo-b", PeerURLs: []string{"http://10.0.0.2:2380"}},
		{ID: 0xa, PeerURLs: []string{"http://demo-a.demo.tenant.svc:2380"}},
		{ID: 0xe0, Name: "stray-too"},
	}
	var got []string
	for _, p := range etcdread.Join(crs, list) {
		got = append(got, row(p))
	}
	want := []string{
		"demo-a|a|",
		"demo-b|b|",
		"demo-gone|-|" + etcdread.OrphanNotInEtcd,
		"demo-new|-|",
		"-|e0|" + etcdread.OrphanNoEtcdMember,
		"-|f0|" + etcdread.OrphanNoEtcdMember,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Join (-want +got):\n%s", diff)
	}
}

func TestPairsWithoutAMemberListFlagNoOrphan(t *testing.T) {
	t.Parallel()
	crs := []etcdv1alpha2.EtcdMember{cr("demo-a", "a")}
	for _, v := range []*etcdread.View{
		{State: etcdread.StateSkipped},
		{State: etcdread.StateReached, MembersErr: etcdclient.NewError("MemberList", etcdclient.ErrNoLeader)},
	} {
		ps := etcdread.Pairs(crs, v)
		if len(ps) != 1 || !ps[0].EtcdUnknown || ps[0].Orphan() != "" {
			t.Errorf("state %s: pairs %v, want the member alone, unknown to etcd, no orphan", v.State, ps)
		}
	}
}
