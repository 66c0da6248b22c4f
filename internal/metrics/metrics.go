package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Outcomes of a membership action.
const (
	// OutcomeSuccess: the call succeeded (or was already done, e.g. "peer URL exists").
	OutcomeSuccess = "success"
	// OutcomeRefused: the quorum gate refused the action; nothing was sent to etcd.
	OutcomeRefused = "refused"
	// OutcomeWaiting: etcd asked to wait (learner not in sync, strict reconfiguration check).
	OutcomeWaiting = "waiting"
	// OutcomeError: the call failed.
	OutcomeError = "error"
)

var (
	membershipActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_membership_actions_total",
		Help: "Membership and leadership actions of the EtcdCluster controller, per cluster, by type (AddLearner, Promote, Remove, MoveLeader) and outcome (success, refused, waiting, error).",
	}, []string{"namespace", "cluster", "type", "outcome"})

	stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_operator_reconcile_step_duration_seconds",
		Help:    "Duration of each step of an EtcdCluster reconcile pass.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"controller", "step"})

	clustersByReason = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_clusters",
		Help: "EtcdClusters by the reason of their Available and Degraded conditions.",
	}, []string{"condition", "status", "reason"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(membershipActions, stepDuration, clustersByReason)
}

// MembershipAction counts one membership action on namespace/cluster. The cluster labels cost
// at most 16 series per cluster (4 types × 4 outcomes, only those that occurred), dropped with
// the cluster (ForgetClusterState); they say which cluster's membership churns.
func MembershipAction(namespace, cluster, actionType, outcome string) {
	membershipActions.WithLabelValues(namespace, cluster, actionType, outcome).Inc()
}

// StepDuration records how long one reconcile step took.
func StepDuration(controller, step string, d time.Duration) {
	stepDuration.WithLabelValues(controller, step).Observe(d.Seconds())
}

// ConditionState is one condition's status and reason.
type ConditionState struct {
	Status, Reason string
}

// reasonKey is a (condition, status, reason) series.
type reasonKey struct{ condition, status, reason string }

// clusters holds each cluster's condition states, so that the gauge counts clusters per reason
// without a series per cluster.
var clusters = struct {
	sync.Mutex
	states map[string]map[string]ConditionState
}{states: map[string]map[string]ConditionState{}}

// SetClusterConditions records cluster's condition states (condition type → state) and updates
// the per-reason counts.
func SetClusterConditions(cluster string, states map[string]ConditionState) {
	clusters.Lock()
	defer clusters.Unlock()
	clusters.states[cluster] = states
	recount()
}

// ForgetCluster drops a deleted cluster from the counts.
func ForgetCluster(cluster string) {
	clusters.Lock()
	defer clusters.Unlock()
	delete(clusters.states, cluster)
	recount()
}

// recount rebuilds the gauge; called with the lock held. Fleets have at most thousands of
// clusters, so a rebuild per pass is cheap next to the pass itself.
func recount() {
	counts := map[reasonKey]float64{}
	for _, states := range clusters.states {
		for cond, st := range states {
			counts[reasonKey{cond, st.Status, st.Reason}]++
		}
	}
	clustersByReason.Reset()
	for k, n := range counts {
		clustersByReason.WithLabelValues(k.condition, k.status, k.reason).Set(n)
	}
}
