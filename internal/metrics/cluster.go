package metrics

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Per-cluster series (docs/monitoring.md, "Metrics"): what an on-call person asks of one cluster,
// set once per reconcile pass from the view the pass already computed (no etcd call of their
// own). Each carries namespace and cluster; the per-member ones also member, the EtcdMember's
// name, so a cluster of n members costs a fixed set of series plus 4n. ForgetClusterState drops
// them all when the cluster is deleted.
var (
	clusterLabels = []string{"namespace", "cluster"}
	memberLabels  = []string{"namespace", "cluster", "member"}

	desiredMembers = newClusterGauge("etcd_operator_cluster_desired_members",
		"Members the cluster should have: status.observed.replicas, the latched spec.replicas (0 while paused).")
	readyMembers = newClusterGauge("etcd_operator_cluster_ready_members",
		"Running voters whose EtcdMember is Ready (status.readyMembers).")
	voters = newClusterGauge("etcd_operator_cluster_voters",
		"Voting members in etcd's member list (while etcd does not answer, the members' last recorded status.isVoter).")
	learners = newClusterGauge("etcd_operator_cluster_learners",
		"Learners in etcd's member list; no series while etcd's member list does not answer.")
	quorumMargin = newClusterGauge("etcd_operator_cluster_quorum_margin",
		"Ready voters beyond the quorum of the voters: how many may fail with quorum kept; negative when quorum is lost. No series while the cluster is paused (0 desired members).")
	hasLeader = newClusterGauge("etcd_operator_cluster_has_leader",
		"1 when a member that answered Status in the last pass knew a leader, 0 otherwise.")
	quotaBytes = newClusterGauge("etcd_operator_cluster_quota_backend_bytes",
		"The backend quota the members run with (--quota-backend-bytes, or etcd's default 2 GiB); the NOSPACE alarm fires above it.")
	rollInProgress = newClusterGauge("etcd_operator_cluster_rolling_update_in_progress",
		"1 while a rolling update restarts members one at a time (Progressing reason RollingUpdate), 0 otherwise.")
	healInProgress = newClusterGauge("etcd_operator_cluster_heal_in_progress",
		"1 while the operator replaces a failed member or recovers a lost quorum (Progressing reason ReplacingMember or RecoveringQuorum), 0 otherwise.")

	alarmsActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_alarms",
		Help: "Active etcd alarms by type (NOSPACE, CORRUPT); no series while etcd's member list does not answer.",
	}, []string{"namespace", "cluster", "type"})

	leaderChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_cluster_leader_changes_total",
		Help: "Times a reconcile pass saw a leader other than the one the previous pass saw (no leader in between does not count).",
	}, clusterLabels)

	memberUp = newMemberGauge("etcd_operator_member_up",
		"1 when the running member answered the operator's Status call in the last pass, 0 otherwise.")
	memberDBSize = newMemberGauge("etcd_operator_member_db_size_bytes",
		"Size of the member's backend database file, from its Status answer in the last pass.")
	memberDBInUse = newMemberGauge("etcd_operator_member_db_size_in_use_bytes",
		"Part of the member's database holding live data (the rest is reclaimed by defragmentation), from its Status answer.")
	memberQuotaUsage = newMemberGauge("etcd_operator_member_quota_usage_ratio",
		"The member's database size divided by the cluster's backend quota; NOSPACE is raised at 1.")
)

// AlarmTypes are the alarm types etcd raises; each has a series per cluster, 0 when inactive,
// so that an alert compares a value instead of testing for absence.
var AlarmTypes = []string{"NOSPACE", "CORRUPT"}

func newClusterGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, clusterLabels)
}

func newMemberGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, memberLabels)
}

var (
	clusterGauges = []*prometheus.GaugeVec{desiredMembers, readyMembers, voters, learners, quorumMargin,
		hasLeader, quotaBytes, rollInProgress, healInProgress}
	memberGauges = []*prometheus.GaugeVec{memberUp, memberDBSize, memberDBInUse, memberQuotaUsage}
)

func init() {
	for _, g := range append(slices.Clone(clusterGauges), memberGauges...) {
		ctrlmetrics.Registry.MustRegister(g)
	}
	ctrlmetrics.Registry.MustRegister(alarmsActive, leaderChanges)
}

// ClusterState is what one pass computed about a cluster, in the terms of the series above.
type ClusterState struct {
	// Desired, Ready, Voters are the latched replicas, the Ready voters and the voters.
	Desired, Ready, Voters int
	// QuorumMargin is Ready voters minus the quorum of Voters.
	QuorumMargin int
	// EtcdKnown is true when etcd's member list answered in the pass: Learners, Alarms and
	// Leader are etcd's answers only then.
	EtcdKnown bool
	// Learners is the number of learners in etcd's member list.
	Learners int
	// Leader is the leader's member ID; 0 when no member that answered knew one.
	Leader uint64
	// Alarms counts the active alarms by type (AlarmTypes).
	Alarms map[string]int
	// QuotaBytes is the backend quota; 0 when unknown (no quota series, no usage ratio).
	QuotaBytes int64
	// Rolling and Healing are the roll and heal in progress.
	Rolling, Healing bool
	// Members are the running members.
	Members []MemberState
}

// MemberState is one running member as the pass saw it.
type MemberState struct {
	// Name is the EtcdMember's name.
	Name string
	// Up is true when the member answered Status in the pass; the sizes are its answer's.
	Up                  bool
	DBSize, DBSizeInUse int64
}

// clusterMemory is what the series need from the previous pass of each cluster: the leader it
// saw (leader changes) and the members it had series for (a member that left loses its series).
var clusterMemory = struct {
	sync.Mutex
	leader  map[[2]string]uint64
	members map[[2]string][]string
}{leader: map[[2]string]uint64{}, members: map[[2]string][]string{}}

// SetClusterState sets every per-cluster series of namespace/cluster from one pass's state.
func SetClusterState(namespace, cluster string, st ClusterState) {
	key := [2]string{namespace, cluster}
	labels := prometheus.Labels{"namespace": namespace, "cluster": cluster}
	set := func(g *prometheus.GaugeVec, v float64) { g.With(labels).Set(v) }
	set(desiredMembers, float64(st.Desired))
	set(readyMembers, float64(st.Ready))
	set(voters, float64(st.Voters))
	set(hasLeader, boolValue(st.EtcdKnown && st.Leader != 0))
	set(rollInProgress, boolValue(st.Rolling))
	set(healInProgress, boolValue(st.Healing))
	if st.Desired > 0 {
		set(quorumMargin, float64(st.QuorumMargin))
	} else {
		quorumMargin.Delete(labels)
	}
	if st.QuotaBytes > 0 {
		set(quotaBytes, float64(st.QuotaBytes))
	} else {
		quotaBytes.Delete(labels)
	}
	if st.EtcdKnown {
		set(learners, float64(st.Learners))
		for _, t := range AlarmTypes {
			alarmsActive.WithLabelValues(namespace, cluster, t).Set(float64(st.Alarms[t]))
		}
	} else {
		learners.Delete(labels)
		alarmsActive.DeletePartialMatch(labels)
	}
	leaderChanges.With(labels).Add(0) // the series exists from the first pass, so increase() sees the first change

	clusterMemory.Lock()
	defer clusterMemory.Unlock()
	if prev := clusterMemory.leader[key]; st.EtcdKnown && st.Leader != 0 {
		if prev != 0 && prev != st.Leader {
			leaderChanges.With(labels).Inc()
		}
		clusterMemory.leader[key] = st.Leader
	}
	clusterMemory.members[key] = setMembers(namespace, cluster, st, clusterMemory.members[key])
}

// setMembers sets the per-member series of st's members, drops those of members the previous
// pass had and this one has not, and returns the names that now have series.
func setMembers(namespace, cluster string, st ClusterState, before []string) []string {
	now := map[string]bool{}
	for _, m := range st.Members {
		now[m.Name] = true
		memberUp.WithLabelValues(namespace, cluster, m.Name).Set(boolValue(m.Up))
		sizes := []*prometheus.GaugeVec{memberDBSize, memberDBInUse, memberQuotaUsage}
		if !m.Up {
			// A member that did not answer has no size: an old one would look current.
			for _, g := range sizes {
				g.DeleteLabelValues(namespace, cluster, m.Name)
			}
			continue
		}
		memberDBSize.WithLabelValues(namespace, cluster, m.Name).Set(float64(m.DBSize))
		memberDBInUse.WithLabelValues(namespace, cluster, m.Name).Set(float64(m.DBSizeInUse))
		if st.QuotaBytes > 0 {
			memberQuotaUsage.WithLabelValues(namespace, cluster, m.Name).Set(float64(m.DBSize) / float64(st.QuotaBytes))
		} else {
			memberQuotaUsage.DeleteLabelValues(namespace, cluster, m.Name)
		}
	}
	for _, name := range before {
		if !now[name] {
			for _, g := range memberGauges {
				g.DeleteLabelValues(namespace, cluster, name)
			}
		}
	}
	return slices.Sorted(maps.Keys(now))
}

// ForgetClusterState drops every per-cluster series of a deleted cluster, and its membership
// action counts.
func ForgetClusterState(namespace, cluster string) {
	labels := prometheus.Labels{"namespace": namespace, "cluster": cluster}
	for _, g := range append(slices.Clone(clusterGauges), memberGauges...) {
		g.DeletePartialMatch(labels)
	}
	alarmsActive.DeletePartialMatch(labels)
	leaderChanges.DeletePartialMatch(labels)
	membershipActions.DeletePartialMatch(labels)
	clusterMemory.Lock()
	defer clusterMemory.Unlock()
	delete(clusterMemory.leader, [2]string{namespace, cluster})
	delete(clusterMemory.members, [2]string{namespace, cluster})
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
