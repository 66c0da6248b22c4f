//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
)

// timingRunsEnv overrides how many rounds TestLifecycleTimings runs.
const timingRunsEnv = "E2E_TIMING_RUNS"

// TestLifecycleTimings measures the lifecycle figures of the performance targets as the median
// of E2E_TIMING_RUNS rounds (default 3), each on a fresh 3-member cluster with the default
// storage (one PVC per member): bootstrap, scale 3→5, scale 5→3, pause 3→0 and resume 0→3. The
// targets are recorded beside the figures, never asserted: a loaded machine makes every figure
// slower, and the report says what was measured. Each round checks that every step converged,
// and a status observer checks at every moment that Available and the PDB never claim more than
// the Pods support (statusObserver).
func TestLifecycleTimings(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	runs := timingRuns(t)
	measures := []struct {
		name, note string
	}{
		{"bootstrap-3", "create → 3 voters Ready, Available=True/QuorumHealthy, Progressing=False (target ≤ 15 s)"},
		{"scale-3-5", "replicas 5 → converged with 5 voters, on a cluster converged 5 s before (target ≤ 10 s)"},
		{"scale-5-3-membership", "replicas 3 → etcd lists 3 members, status.readyMembers 3, on a cluster converged 5 s before (target ≤ 1 s)"},
		{"scale-5-3-settled", "replicas 3 → etcd lists 3 voters and no Pod of the cluster is terminating (target ≤ 1 s)"},
		{"scale-5-3", "replicas 3 → converged: removed members' Pods and PVCs gone"},
		{"pause-3-0", "replicas 0 → Progressing=False/Paused, no Pods"},
		{"resume-0-3", "replicas 3 → converged with 3 voters (target ≤ 15 s)"},
	}
	got := map[string][]time.Duration{}
	for i := range runs {
		name := fmt.Sprintf("timing%d", i)
		watch := observeStatus(f, name)
		step := func(measure string, fn func()) {
			start := time.Now()
			fn()
			got[measure] = append(got[measure], since(start))
		}
		step("bootstrap-3", func() {
			createCluster(f, newCluster(f, name, 3))
			waitConverged(f, name, 3, bootstrapTimeout)
		})
		// etcd refuses a member add until its leader has been connected to every voter for 5 s
		// (membership.StrictReconfigSettle). A cluster a user scales has been up for longer; right
		// after bootstrap the wait would be measured as part of the scale-up.
		time.Sleep(membership.StrictReconfigSettle)
		step("scale-3-5", func() {
			setReplicas(f, name, 5)
			waitConverged(f, name, 5, 2*scaleTimeout)
		})
		// etcd refuses to remove a voter unless, without it, a quorum of the remaining voters
		// has been connected to the leader for 5 s: the members just added must settle first.
		time.Sleep(membership.StrictReconfigSettle)
		start := time.Now()
		setReplicas(f, name, 3)
		waitEtcdMembers(f, name, 3, scaleTimeout)
		got["scale-5-3-membership"] = append(got["scale-5-3-membership"], since(start))
		waitPodsSettled(f, name, 3, scaleTimeout)
		got["scale-5-3-settled"] = append(got["scale-5-3-settled"], since(start))
		waitConverged(f, name, 3, scaleTimeout)
		got["scale-5-3"] = append(got["scale-5-3"], since(start))
		step("pause-3-0", func() {
			setReplicas(f, name, 0)
			waitCondition(f, name, etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse, "Paused", 2*scaleTimeout)
			if err := f.WaitForNoPods(f.Ctx, f.Namespace, podSelector(name), time.Minute); err != nil {
				t.Fatal(err)
			}
		})
		step("resume-0-3", func() {
			setReplicas(f, name, 3)
			waitConverged(f, name, 3, 2*scaleTimeout)
		})
		watch.check(f)
		deleteCluster(f, name)
	}
	for _, m := range measures {
		med, all := median(got[m.name])
		f.Record(fmt.Sprintf("%s (median of %d)", m.name, len(got[m.name])), med, m.note+"; runs: "+all)
	}
}

// timingRuns is E2E_TIMING_RUNS, default 3.
func timingRuns(t *testing.T) int {
	t.Helper()
	v := os.Getenv(timingRunsEnv)
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number of rounds, e.g. %s=3", timingRunsEnv, v, timingRunsEnv)
	}
	return n
}

// median is the median of ds (the mean of the middle two for an even count) and every
// duration, in run order, for the report.
func median(ds []time.Duration) (time.Duration, string) {
	all := make([]string, len(ds))
	for i, d := range ds {
		all[i] = d.Round(10 * time.Millisecond).String()
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0, ""
	}
	m := s[n/2]
	if n%2 == 0 {
		m = (s[n/2-1] + s[n/2]) / 2
	}
	return m, strings.Join(all, ", ")
}

// timingPollInterval is how often the waits of the 5 → 3 figures check: their target is 1 s, and
// the default 250 ms would add up to a quarter of it to every figure. Each check is a few API and
// etcd reads, so the checks run about back to back.
const timingPollInterval = 20 * time.Millisecond

// waitPodsSettled waits until cluster name has exactly n Pods and none of them is terminating.
func waitPodsSettled(f *framework.Test, name string, n int, timeout time.Duration) {
	f.T.Helper()
	err := framework.Poll(f.Ctx, fmt.Sprintf("%d Pods of %s, none terminating", n, name), timeout, timingPollInterval, func(ctx context.Context) (bool, string, error) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
		if err != nil {
			return false, err.Error(), nil
		}
		terminating := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				terminating++
			}
		}
		return len(pods.Items) == n && terminating == 0, fmt.Sprintf("%d Pods, %d terminating", len(pods.Items), terminating), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// waitEtcdMembers waits until every member the cluster still has (its EtcdMembers) answers that
// etcd's member list holds exactly n members, all started voters, and the cluster's status counts
// n Ready members: the moment a scale-down is done as far as etcd and a reader of the status are
// concerned. Removed members are not asked: until their Pods are gone they answer with the
// membership they last knew.
func waitEtcdMembers(f *framework.Test, name string, n int, timeout time.Duration) {
	f.T.Helper()
	err := framework.Poll(f.Ctx, fmt.Sprintf("etcd of %s to list %d voters", name, n), timeout, timingPollInterval, func(ctx context.Context) (bool, string, error) {
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		members, err := listMembers(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		if len(members) != n || int(ec.Status.ReadyMembers) != n {
			return false, fmt.Sprintf("%d EtcdMembers, readyMembers %d", len(members), ec.Status.ReadyMembers), nil
		}
		for _, m := range members {
			pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
			if err != nil || pod.Status.PodIP == "" {
				return false, fmt.Sprintf("Pod of %s: no IP (%v)", m.Name, err), nil
			}
			eps, _ := etcdconn.PodEndpoints([]corev1.Pod{*pod}, etcdconn.ClientPort, false)
			if len(eps) != 1 {
				return false, fmt.Sprintf("Pod of %s: no endpoint", m.Name), nil
			}
			ml, err := memberListAt(ctx, eps[0])
			if err != nil {
				return false, fmt.Sprintf("MemberList at %s: %v", m.Name, err), nil
			}
			voters, learners, unstarted := countMembers(ml)
			if voters != n || learners != 0 || unstarted != 0 || len(ml.Members) != n {
				return false, fmt.Sprintf("%s lists %d voters, %d learners, %d unstarted", m.Name, voters, learners, unstarted), nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// statusObserver samples a cluster's status, PodDisruptionBudget and voter Pods every
// statusObserveInterval while a flow runs, and keeps every moment that broke an invariant of
// docs/design/quorum.md, "PDB arithmetic" and "Available arithmetic":
//   - Available=True only while Ready voter Pods, and status.readyMembers, reach a quorum of the
//     target (status.observed.replicas);
//   - while any voter Pod exists and the target is not 0, a PDB exists (after at most
//     pdbLagAllowed, one reconcile) whose minAvailable is at least a quorum of the target.
type statusObserver struct {
	mu         sync.Mutex
	samples    int
	violations []string
	stop       func()
	// pdbMissingSince is since when voters have existed without a PDB (sampling goroutine only).
	pdbMissingSince time.Time
}

const (
	statusObserveInterval = 200 * time.Millisecond
	// pdbLagAllowed is how long a voter may exist without a matching PDB: the PDB is written at
	// the end of the pass that observed the voter.
	pdbLagAllowed = 2 * time.Second
)

func observeStatus(f *framework.Test, name string) *statusObserver {
	o := &statusObserver{}
	o.stop = sampleEvery(f, statusObserveInterval, func(ctx context.Context) { o.sample(ctx, f, name) })
	return o
}

// sample reads the cluster, then its voter Pods, then its PDB, and records what breaks an
// invariant.
func (o *statusObserver) sample(ctx context.Context, f *framework.Test, name string) {
	ec, err := getCluster(ctx, f, name)
	if err != nil || ec.Status.Observed == nil {
		o.pdbMissingSince = time.Time{}
		return
	}
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil {
		return
	}
	pdb, pdbErr := f.Kube.PolicyV1().PodDisruptionBudgets(f.Namespace).Get(ctx, name, metav1.GetOptions{})
	if pdbErr != nil && !apierrors.IsNotFound(pdbErr) {
		return
	}
	target := int(ec.Status.Observed.Replicas)
	ready := 0
	for i := range pods.Items {
		if framework.PodReady(&pods.Items[i]) && pods.Items[i].DeletionTimestamp == nil {
			ready++
		}
	}
	q := target/2 + 1
	var bad []string
	if avail := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionAvailable); avail != nil && avail.Status == metav1.ConditionTrue {
		if ready < q || int(ec.Status.ReadyMembers) < q {
			bad = append(bad, fmt.Sprintf("Available=True/%s with %d Ready voter Pods and readyMembers %d, target %d needs %d", avail.Reason, ready, ec.Status.ReadyMembers, target, q))
		}
	}
	now := time.Now()
	switch {
	case len(pods.Items) == 0 || target == 0:
		o.pdbMissingSince = time.Time{}
	case apierrors.IsNotFound(pdbErr):
		if o.pdbMissingSince.IsZero() {
			o.pdbMissingSince = now
		} else if now.Sub(o.pdbMissingSince) > pdbLagAllowed {
			bad = append(bad, fmt.Sprintf("no PDB for %s while %d voter Pods exist", now.Sub(o.pdbMissingSince).Round(time.Millisecond), len(pods.Items)))
		}
	default:
		o.pdbMissingSince = time.Time{}
		if min := pdb.Spec.MinAvailable; min == nil || min.IntValue() < q {
			bad = append(bad, fmt.Sprintf("PDB minAvailable %v below a quorum (%d) of target %d", min, q, target))
		}
	}
	o.mu.Lock()
	o.samples++
	for _, b := range bad {
		if len(o.violations) < 20 {
			o.violations = append(o.violations, now.Format("15:04:05.000")+" "+b)
		}
	}
	o.mu.Unlock()
}

// check stops the observer and fails the test on any recorded violation.
func (o *statusObserver) check(f *framework.Test) {
	f.T.Helper()
	o.stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	f.T.Logf("status observer: %d samples, %d violations", o.samples, len(o.violations))
	if o.samples == 0 {
		f.T.Error("status observer: the cluster was never read")
	}
	for _, v := range o.violations {
		f.T.Errorf("status invariant broken at %s", v)
	}
}
