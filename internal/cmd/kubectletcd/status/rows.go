package status

import (
	"k8s.io/apimachinery/pkg/api/meta"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdread"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

var formatID = etcdclient.FormatID

// members builds the table's rows: one per EtcdMember, then one per etcd member no EtcdMember
// is.
func members(s *clusterread.State, v *etcdread.View) []Member {
	leader, top := leaderAndTop(v.Statuses)
	out := []Member{}
	for _, p := range etcdread.Pairs(s.Members, v) {
		out = append(out, member(p, s, v, leader, top))
	}
	return out
}

func member(p etcdread.Pair, s *clusterread.State, v *etcdread.View, leader, top uint64) Member {
	var m Member
	var st *etcdclient.Status
	if p.CR != nil {
		m = fromCR(p.CR, s)
		if got, ok := v.Statuses[p.CR.Name]; ok {
			st = &got
			fromStatus(&m, got, top)
		}
		if err, ok := v.StatusErrs[p.CR.Name]; ok {
			m.StatusError = etcdread.ErrorKind(err)
		}
	}
	if p.Etcd != nil {
		m.ID = p.Etcd.IDHex()
		if p.CR == nil {
			m.EtcdName = p.Etcd.Name
		}
	}
	m.Orphan = p.Orphan()
	m.Role = role(p, st, leader)
	return m
}

// fromCR is what the EtcdMember and its Pod say; etcd's answers override ID and version.
func fromCR(cr *etcdv1alpha2.EtcdMember, s *clusterread.State) Member {
	m := Member{
		Name:    cr.Name,
		ID:      cr.Status.MemberID,
		Version: cr.Status.Version,
		Ready:   condition(cr, etcdv1alpha2.ConditionReady),
		Updated: condition(cr, etcdv1alpha2.ConditionUpdated),
		Healthy: condition(cr, etcdv1alpha2.ConditionHealthy),
	}
	if pod, ok := s.Pods[cr.Name]; ok {
		m.Pod, m.Node = pod.Name, pod.Spec.NodeName
	}
	return m
}

func condition(cr *etcdv1alpha2.EtcdMember, t string) *MemberCondition {
	c := meta.FindStatusCondition(cr.Status.Conditions, t)
	if c == nil {
		return nil
	}
	return &MemberCondition{Status: c.Status, Reason: c.Reason}
}

func fromStatus(m *Member, st etcdclient.Status, top uint64) {
	m.ID = formatID(st.ID)
	m.Version = st.Version
	db, inUse, applied := st.DBSize, st.DBSizeInUse, st.RaftAppliedIndex
	lag := top - applied
	m.DBSizeBytes, m.DBSizeInUseBytes, m.RaftAppliedIndex, m.AppliedIndexLag = &db, &inUse, &applied, &lag
}

// leaderAndTop are the leader the member with the newest term knows (0 when none knows one),
// and the highest applied index of the members that answered. A member cut off from the others
// may still name an old leader, with an older term.
func leaderAndTop(statuses map[string]etcdclient.Status) (leader, top uint64) {
	var term uint64
	for _, st := range statuses {
		if st.Leader != 0 && st.RaftTerm >= term {
			leader, term = st.Leader, st.RaftTerm
		}
		top = max(top, st.RaftAppliedIndex)
	}
	return leader, top
}

// role is learner, leader or follower from etcd's answers; voter when etcd knows no leader;
// and, when etcd said nothing about the member, what its EtcdMember's status.isVoter records.
func role(p etcdread.Pair, st *etcdclient.Status, leader uint64) string {
	var id uint64
	switch {
	case p.Etcd != nil && p.Etcd.IsLearner, st != nil && st.IsLearner:
		return RoleLearner
	case p.Etcd != nil:
		id = p.Etcd.ID
	case st != nil:
		id = st.ID
	case p.EtcdUnknown && p.CR.Status.MemberID != "":
		if p.CR.Status.IsVoter {
			return RoleVoter
		}
		return RoleLearner
	default:
		return ""
	}
	switch {
	case leader == 0:
		return RoleVoter
	case id == leader:
		return RoleLeader
	}
	return RoleFollower
}
