package etcdread

import (
	"slices"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Orphan kinds: a member one side lists and the other does not explain.
const (
	// OrphanNoEtcdMember is an etcd member no EtcdMember is: a leftover the operator removes
	// after its orphan grace, or one a person added by hand
	// (docs/design/membership-flows.md, "Orphan etcd members").
	OrphanNoEtcdMember = "NoEtcdMember"
	// OrphanNotInEtcd is an EtcdMember with a member ID that etcd does not list: it was removed
	// from etcd and the operator has not replaced it yet.
	OrphanNotInEtcd = "NotInEtcd"
)

// Pair is one member as etcd and the custom resources see it; either side may be missing.
type Pair struct {
	// CR is the EtcdMember, nil for an etcd member no EtcdMember is.
	CR *etcdv1alpha2.EtcdMember
	// Etcd is etcd's member, nil when etcd does not list the EtcdMember or its list is unknown.
	Etcd *etcdclient.Member
	// EtcdUnknown is true when etcd's member list is unknown (not asked, or MemberList failed):
	// a missing Etcd then says nothing.
	EtcdUnknown bool
}

// Orphan is the pair's orphan kind, or "" when both sides agree or the EtcdMember was never
// added (no member ID yet: it is joining, not orphaned).
func (p Pair) Orphan() string {
	switch {
	case p.EtcdUnknown:
		return ""
	case p.CR == nil:
		return OrphanNoEtcdMember
	case p.Etcd == nil && p.CR.Status.MemberID != "":
		return OrphanNotInEtcd
	}
	return ""
}

// Pairs pairs the EtcdMembers with etcd's member list when v has one, and otherwise returns
// them alone, marked as unknown to etcd.
func Pairs(crs []etcdv1alpha2.EtcdMember, v *View) []Pair {
	if v.Reached() && v.MembersErr == nil {
		return Join(crs, v.Members)
	}
	out := make([]Pair, 0, len(crs))
	for i := range crs {
		out = append(out, Pair{CR: &crs[i], EtcdUnknown: true})
	}
	return out
}

// Join pairs EtcdMembers (in their order) with etcd's members the way the operator does: same
// peer URL, or same name once the member has started (docs/design/membership-flows.md,
// "Orphan etcd members"). etcd members no EtcdMember is follow, by ID.
func Join(crs []etcdv1alpha2.EtcdMember, list []etcdclient.Member) []Pair {
	used := make([]bool, len(list))
	out := make([]Pair, 0, len(crs)+len(list))
	for i := range crs {
		m := &crs[i]
		p := Pair{CR: m}
		if j := find(m, list, used); j >= 0 {
			used[j] = true
			p.Etcd = &list[j]
		}
		out = append(out, p)
	}
	var rest []Pair
	for j := range list {
		if !used[j] {
			rest = append(rest, Pair{Etcd: &list[j]})
		}
	}
	slices.SortFunc(rest, func(a, b Pair) int {
		switch {
		case a.Etcd.ID < b.Etcd.ID:
			return -1
		case a.Etcd.ID > b.Etcd.ID:
			return 1
		}
		return 0
	})
	return append(out, rest...)
}

func find(m *etcdv1alpha2.EtcdMember, list []etcdclient.Member, used []bool) int {
	peer := desired.PeerURL(m)
	for j, e := range list {
		if !used[j] && (slices.Contains(e.PeerURLs, peer) || (e.Name != "" && e.Name == m.Name)) {
			return j
		}
	}
	return -1
}
