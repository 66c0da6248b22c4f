package etcdobserve

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Member returns the member named name.
func (o *Observation) Member(name string) (*Member, bool) {
	i := slices.IndexFunc(o.Members, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return nil, false
	}
	return &o.Members[i], true
}

// Names are the members' names, sorted.
func (o *Observation) Names() []string {
	out := make([]string, 0, len(o.Members))
	for _, m := range o.Members {
		out = append(out, m.Name)
	}
	return out
}

// NameOf names the member with etcd ID id: its EtcdMember's name when one has it as
// status.memberID, else the name etcd lists it under, else "" (a removed member, or ID 0,
// which a CORRUPT alarm naming no member carries).
func (o *Observation) NameOf(id uint64) string {
	if m, ok := o.byID(id); ok {
		return m.Name
	}
	for _, cr := range o.State.Members {
		if cr.Status.MemberID == etcdclient.FormatID(id) {
			return cr.Name
		}
	}
	return ""
}

func (o *Observation) byID(id uint64) (*Member, bool) {
	i := slices.IndexFunc(o.Members, func(m Member) bool { return m.ID == id })
	if i < 0 || id == 0 {
		return nil, false
	}
	return &o.Members[i], true
}

// Leader is the member the answering members name as leader; nil when none answered with one.
func (o *Observation) Leader() *Member {
	for _, m := range o.Members {
		if m.Status != nil && m.Status.Leader != 0 {
			if l, ok := o.byID(m.Status.Leader); ok {
				return l
			}
		}
	}
	return nil
}

// HasAlarm reports whether an alarm of type t names id.
func (o *Observation) HasAlarm(id uint64, t etcdclient.AlarmType) bool {
	return slices.ContainsFunc(o.Alarms, func(a etcdclient.Alarm) bool { return a.MemberID == id && a.Type == t })
}

// podReady is the operator's readiness of m's Pod: its Ready condition, or, while any CORRUPT
// alarm is active, a running Pod whose member answered, since etcd's readiness probe then fails
// on every member (docs/design/healing.md, "CORRUPT alarms").
func (o *Observation) podReady(m Member) bool {
	// Pod mode has no EtcdMembers; a member's Pod is the one named like it.
	if m.Pod == nil || (m.CR == nil && o.Pod == nil) {
		return false
	}
	corrupt := slices.ContainsFunc(o.Alarms, func(a etcdclient.Alarm) bool { return a.Type == etcdclient.AlarmCorrupt })
	return podstate.ReadyCondition(m.Pod) || (corrupt && m.Status != nil && podstate.Running(m.Pod))
}

// Voter is m as the quorum gate sees it (docs/design/quorum.md, "Vocabulary").
func (o *Observation) Voter(m Member) quorum.Voter {
	answered := m.Status != nil || o.podAnswers(m)
	obs := quorum.Observation{StatusAnswered: answered, PodReady: o.podReady(m), CorruptAlarm: o.HasAlarm(m.ID, etcdclient.AlarmCorrupt)}
	return quorum.Voter{
		Name:   m.Name,
		Health: obs.Health(),
		// Its answer was given as a learner: nobody has seen it vote yet.
		JustPromoted: m.Status != nil && m.Status.IsLearner,
	}
}

// QuorumView projects the observation for quorum.Check, as the operator does.
func (o *Observation) QuorumView() quorum.View {
	var v quorum.View
	for _, m := range o.Members {
		if m.Learner {
			v.Learners = append(v.Learners, quorum.Learner{Name: m.Name, Started: m.Started})
			continue
		}
		v.Voters = append(v.Voters, o.Voter(m))
	}
	return v
}

// Updated reports m's EtcdMember Updated condition: its Pod runs the cluster's current
// template, so no roll will restart it soon.
func Updated(m Member) bool {
	return m.CR != nil && meta.IsStatusConditionTrue(m.CR.Status.Conditions, etcdv1alpha2.ConditionUpdated)
}

// Unhealthy says why voter m does not count as healthy for the quorum gate; empty when it does.
func (o *Observation) Unhealthy(m Member) string {
	switch {
	case o.Pod != nil && !o.Target(m) && !o.podAnswers(m):
		return "has no Ready Pod named like it (pod mode asks only Pod " + o.Pod.Pod.Name + " for its Status)"
	case m.Status == nil && !o.podAnswers(m):
		return "did not answer Status (" + m.StatusErr + ")"
	case m.Status != nil && m.Status.IsLearner:
		return "answered as a learner: it was just promoted"
	case !o.podReady(m):
		return "has no Ready Pod"
	case o.HasAlarm(m.ID, etcdclient.AlarmCorrupt):
		return "has a CORRUPT alarm"
	default:
		return ""
	}
}

// etcdDefaultQuota is etcd's own --quota-backend-bytes default, which an explicit 0 in
// spec.options.quotaBackendBytes selects (docs/defrag.md, "The rule").
const etcdDefaultQuota int64 = 2 << 30

// Quota is the backend quota c's members run with, as the EtcdDefrag controller computes it.
func Quota(c *etcdv1alpha2.EtcdCluster) int64 {
	q, set := desired.EffectiveQuotaBackendBytes(c.Spec.Options, desired.StorageSize(c.Spec.Storage))
	if !set {
		return etcdDefaultQuota
	}
	return q
}
