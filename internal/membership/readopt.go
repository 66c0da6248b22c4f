package membership

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Readopt is what a KindReadopt action writes besides the member's name, PVC, member ID and
// initialCluster (docs/design/membership-flows.md, "Re-adoption of orphan PVCs").
type Readopt struct {
	// Create says the EtcdMember does not exist yet. False when a previous pass created it and
	// crashed before rewriting the PVC's member-uid: only the rest is left to do.
	Create bool
	// Voter is whether etcd lists the member as a voter; meaningful only with Action.MemberID.
	Voter bool
	// Dormant re-creates the member dormant: the cluster is paused (target 0), and the data
	// of its one member must stay where it is, without a Pod.
	Dormant bool
}

// readopt gives a data PVC whose EtcdMember is gone a new EtcdMember under the old name, so that
// the member comes back with its etcd identity and data instead of being replaced by an empty
// one (docs/design/healing.md). In order:
//
//  1. a PVC whose member exists again (re-created by a pass that crashed before it rewrote the
//     PVC's member-uid, or re-applied by a person) gets its member-uid rewritten; this needs no
//     etcd, so it also finishes a re-adoption begun while etcd was silent;
//  2. etcd answers: an orphan PVC whose member etcd still lists, under the peer URL a re-created
//     member would advertise, is re-adopted, with that member's ID. One that etcd does not list
//     is left to orphanPVCs, which deletes it: its member was removed;
//  3. etcd does not answer and no EtcdMember is left but ones re-adopted this way (total member
//     loss, docs/design/healing.md): every orphan PVC is re-adopted, one per pass, with an
//     initialCluster built from all the cluster's data PVCs. Nothing can list the members, and
//     without them nothing ever will: once enough are back to form a quorum, etcd answers and
//     rule 2 takes over. A paused cluster gets its one (dormant) member back, no more.
//
// Nothing is re-adopted before the cluster ID is latched, nor from a PVC of another cluster or an
// earlier incarnation of this one (PVC.Foreign).
func readopt(s *Scope) (Action, bool) {
	if s.ClusterID == "" {
		return Action{}, false
	}
	pvcs := readoptable(s)
	if a, ok := finishReadopt(s, pvcs); ok {
		return a, true
	}
	orphans := withoutMember(s, pvcs)
	switch {
	case len(orphans) == 0:
		return Action{}, false
	case s.Etcd.Known:
		return readoptListed(s, orphans)
	}
	return readoptLost(s, pvcs, orphans)
}

// withoutMember are the PVCs among pvcs whose member has no EtcdMember, by name or UID.
func withoutMember(s *Scope, pvcs []PVC) []PVC {
	var orphans []PVC
	for _, p := range pvcs {
		if !slices.ContainsFunc(s.Members, func(m Member) bool { return m.Name == p.Member || m.UID == p.MemberUID }) {
			orphans = append(orphans, p)
		}
	}
	return orphans
}

// awaitingReadoption names the members whose EtcdMember is gone while their data PVC waits to
// be re-adopted, sorted: they hold the cluster's data but serve nothing until they are back.
func awaitingReadoption(s *Scope) []string {
	if s.ClusterID == "" {
		return nil
	}
	pvcs := readoptable(s)
	var names []string
	for _, p := range withoutMember(s, pvcs) {
		// The same tests as the re-adoption rules: a member etcd lists at the PVC's peer URL, or,
		// with etcd silent, total loss. Any other orphan is a replaced member's PVC on its way out.
		e, listed := etcdMemberNamed(s, p.Member)
		if (s.Etcd.Known && listed && slices.Contains(e.PeerURLs, p.PeerURL)) || (!s.Etcd.Known && onlyReadopted(s, pvcs)) {
			names = append(names, p.Member)
		}
	}
	slices.Sort(names)
	return names
}

// finishReadopt is rule 1: the PVC of a member re-created under its name names the member.
func finishReadopt(s *Scope, pvcs []PVC) (Action, bool) {
	for _, p := range pvcs {
		m, ok := memberNamed(s, p.Member)
		// A member made afresh (GenerateName happened to pick the name) or still pending did
		// not come back for this data: the member controller refuses the PVC for it instead.
		if !ok || m.UID == p.MemberUID || !p.MemberRecreated || m.Deleting || m.RemovalReason != "" || m.Pending {
			continue
		}
		a := Action{Kind: KindReadopt, Member: m.Name, PVC: p.Name, Reason: ReasonReplacingMember,
			Message: fmt.Sprintf("giving PVC %s to re-adopted member %s", p.Name, m.Name)}
		if e, ok := etcdMemberNamed(s, m.Name); ok {
			a.MemberID, a.InEtcd, a.Readopt.Voter = e.ID, true, !e.IsLearner
		}
		return a, true
	}
	return Action{}, false
}

// readoptListed is rule 2: an orphan PVC whose member etcd still lists.
func readoptListed(s *Scope, orphans []PVC) (Action, bool) {
	for _, p := range orphans {
		e, ok := etcdMemberNamed(s, p.Member)
		// A different peer URL means the member was not one this operator created the way it
		// would re-create it (adopted from elsewhere, say): its Pod would advertise an address
		// etcd does not know. It stays an orphan, for a person to look at.
		if !ok || !slices.Contains(e.PeerURLs, p.PeerURL) {
			continue
		}
		return Action{Kind: KindReadopt, Member: p.Member, PVC: p.Name, MemberID: e.ID, InEtcd: true,
			InitialCluster: InitialCluster(s.Etcd.Members, p.Member, p.PeerURL),
			Readopt:        Readopt{Create: true, Voter: !e.IsLearner, Dormant: s.Target == 0},
			Reason:         ReasonReplacingMember,
			Message: fmt.Sprintf("re-adopting PVC %s as member %s (%s), which etcd still lists but whose EtcdMember is gone",
				p.Name, p.Member, e.IDHex())}, true
	}
	return Action{}, false
}

// readoptLost is rule 3: total member loss while etcd is silent.
func readoptLost(s *Scope, pvcs, orphans []PVC) (Action, bool) {
	if !onlyReadopted(s, pvcs) {
		return Action{}, false // quorum lost with members left: they come back on their own
	}
	if s.Target == 0 && len(s.Members) > 0 {
		return Action{}, false // a paused cluster has one member, dormant
	}
	p := orphans[0]
	return Action{Kind: KindReadopt, Member: p.Member, PVC: p.Name, InitialCluster: pvcInitialCluster(pvcs),
		Readopt: Readopt{Create: true, Dormant: s.Target == 0}, Reason: ReasonReplacingMember,
		Message: fmt.Sprintf("re-adopting PVC %s as member %s: no EtcdMember is left and etcd does not answer (%d of %d data PVCs re-adopted)",
			p.Name, p.Member, len(pvcs)-len(orphans), len(pvcs))}, true
}

// readoptable are the PVCs re-adoption may consider, sorted by name: this cluster's, not being
// deleted, naming their member by label and by UID. A PVC without member-uid was not made by the
// operator, and one of another cluster (or of an earlier cluster of the same name, kept by
// reclaimPolicy Retain) holds data this cluster never had.
func readoptable(s *Scope) []PVC {
	var out []PVC
	for _, p := range s.PVCs {
		if !p.Deleting && !p.Foreign && p.Member != "" && p.MemberUID != "" {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b PVC) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// onlyReadopted reports whether every EtcdMember (if any) was re-created for its data PVC. The
// total-loss rule keeps going through them, since the first members re-adopted cannot form a
// quorum alone; a member the operator made afresh means the cluster was not lost, and it waits
// for its Pods instead.
func onlyReadopted(s *Scope, pvcs []PVC) bool {
	for _, m := range s.Members {
		if !slices.ContainsFunc(pvcs, func(p PVC) bool { return p.Member == m.Name && p.MemberRecreated }) {
			return false
		}
	}
	return true
}

// pvcInitialCluster is the --initial-cluster of a member re-adopted while etcd is silent: every
// data PVC's member at the peer URL a re-created member advertises, sorted by name. etcd ignores
// it when the data directory holds a member, which a re-adopted one does; it is set because
// only members with an initialCluster get a Pod.
func pvcInitialCluster(pvcs []PVC) string {
	entries := map[string]string{}
	for _, p := range pvcs {
		entries[p.Member] = p.PeerURL
	}
	parts := make([]string, 0, len(entries))
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		parts = append(parts, name+"="+entries[name])
	}
	return strings.Join(parts, ",")
}

// memberNamed returns the EtcdMember called name.
func memberNamed(s *Scope, name string) (Member, bool) {
	i := slices.IndexFunc(s.Members, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Member{}, false
	}
	return s.Members[i], true
}

// etcdMemberNamed returns the etcd member called name: by the name it started with, or, not
// started yet, by the name in its peer URL.
func etcdMemberNamed(s *Scope, name string) (etcdclient.Member, bool) {
	for _, e := range s.Etcd.Members {
		if e.Name == name || (e.Name == "" && slices.ContainsFunc(e.PeerURLs, func(u string) bool { return NameFromPeerURL(u) == name })) {
			return e, true
		}
	}
	return etcdclient.Member{}, false
}
