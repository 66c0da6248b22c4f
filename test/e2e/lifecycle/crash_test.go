//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// envFailpoints narrows TestOperatorCrash to a comma-separated list of failpoint names.
const envFailpoints = "E2E_FAILPOINTS"

// crashSteps are the step boundaries TestOperatorCrash crashes the operator at, in flow order:
// bootstrap (seed) and scale up (the added member) while a new cluster forms. Each is reached at
// least once by the scenario's flow (create 2 members, then scale to 1). The scale-down steps
// (removal-reason-set, member-removed, member-deleted, pvc-deleted) and scale-up steps after a
// spec change are in TestOperatorCrashAfterSpecChange. leader-moved
// is left out: the victim ranking removes a follower first, so a 2 → 1 scale-down never moves
// leadership; orphan-removed needs a stray learner, member-status-patched recurs on every
// member status write (a crash loop whose back-off outgrows any sensible timeout), and
// dormant-set/member-woken belong to pause/resume. seed-voter-stamped has its own test below
// (TestOperatorCrashAtSeedVoterStamped, a regression test).
//
// PVC members join staged (docs/design/membership-flows.md, "Staged joins"): the added member
// crosses member-staged before its add. Only an unstaged join patches a learner's initial cluster
// after the add, so learner-initial-cluster-patched runs its flow on a Memory cluster.
var crashSteps = []struct {
	step   string
	smoke  bool
	memory bool
}{
	{step: failpoint.SeedCreated},
	{step: failpoint.SeedInitialClusterPatched},
	{step: failpoint.ClusterIDLatched},
	{step: failpoint.MemberCreated},
	{step: failpoint.MemberStaged},
	{step: failpoint.LearnerAdded, smoke: true},
	{step: failpoint.LearnerInitialClusterPatched, memory: true},
	{step: failpoint.LearnerPromoted},
}

// crashTimeout bounds each flow under a crashing operator: every crash costs a container
// restart with kubelet back-off (10 s, 20 s, ...) and a leader-election takeover.
const crashTimeout = 6 * time.Minute

// maxCrashes is how many failpoint exits a flow may cost. The flow reaches each step at most
// once per member it adds or removes (twice in a 2-member create plus scale-down), so more
// exits than this mean the operator hits the step again on every pass without progressing: a
// crash loop that would never converge, reported at once instead of after crashTimeout.
const maxCrashes = 3

// TestOperatorCrash crashes the operator (exit 77 through ETCD_OPERATOR_FAILPOINT on its
// Deployment) right after one step of the bootstrap, scale-up or scale-down flow, every time
// the step recurs, and checks that the flow still converges: a 2-member cluster is created
// (seed bootstrap, then one member added as learner and promoted), then scaled to 1. Throughout,
// at most one learner and no duplicate member are observed; at the end etcd's members are
// exactly the EtcdMembers (no orphan), the cluster ID never changed, and the failpoint fired.
// The env var is removed afterwards (also when the test fails).
//
// Not parallel: the failpoint applies to the one operator, so it would crash every other
// scenario's flows too. Only learner-added is in the smoke set (with removal-reason-set of
// TestOperatorCrashAfterSpecChange it gives the smoke set one crash per flow: bootstrap with its
// learner add, and scale-down).
func TestOperatorCrash(t *testing.T) {
	only := strings.Split(os.Getenv(envFailpoints), ",")
	for _, tc := range crashSteps {
		t.Run(tc.step, func(t *testing.T) {
			if os.Getenv(envFailpoints) != "" && !slices.Contains(only, tc.step) {
				t.Skipf("%s=%s", envFailpoints, os.Getenv(envFailpoints))
			}
			labels := []framework.Label{framework.Disruptive}
			if tc.smoke {
				labels = append(labels, framework.Smoke)
			}
			f := framework.NewTest(t, labels...)
			requireOperator(f)
			crashFlow(f, tc.step, tc.memory)
		})
	}
}

// TestOperatorCrashAtSeedVoterStamped is the crash scenario at seed-voter-stamped, kept apart as
// the regression test of a bug found here: initSeed
// (internal/controller/etcdcluster/etcdcluster_bootstrap.go) used to call
// failpoint.Inject(SeedVoterStamped) after patchMemberStatus even when that call wrote nothing
// (the seed's status.isVoter already true from the pass that crashed), so with the failpoint
// armed every pass after a crash at this boundary "crashed after the stamp" again before it
// patched spec.initialCluster: the seed never got a Pod and the operator sat in CrashLoopBackOff.
// The hook now fires only when the stamp was written, so the flow crashes here once and
// converges. The envtest counterpart is TestCrashEveryTimeAtSeedVoterStamped in
// test/integration/etcdcluster.
func TestOperatorCrashAtSeedVoterStamped(t *testing.T) {
	f := framework.NewTest(t, framework.Disruptive)
	requireOperator(f)
	crashFlow(f, failpoint.SeedVoterStamped, false)
}

func crashFlow(f *framework.Test, step string, memory bool) {
	t := f.T
	armed := armFailpoint(f, step)
	const name = "crash"
	flowStart := time.Now()
	start := flowStart
	ec := newCluster(f, name, 2)
	if memory {
		ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	}
	createCluster(f, ec)
	obs := observeMembership(f, name)
	abort := func(ctx context.Context) error {
		if n := failpointExitsCtx(ctx, f, armed); n > maxCrashes {
			return fmt.Errorf("the operator exited %d times at %s without the flow converging: it reaches the step again on every pass (livelock under a recurring crash)", n, step)
		}
		return nil
	}
	ec = waitConvergedOr(f, name, 2, crashTimeout, abort)
	f.Record("crash-"+step+": create-2", since(start), "bootstrap + one scale-up step with the operator crashing at "+step)
	clusterID := ec.Status.ClusterID
	checkMembership(f, ec, 2)
	start = time.Now()
	setReplicas(f, name, 1)
	ec = waitConvergedOr(f, name, 1, crashTimeout, abort)
	f.Record("crash-"+step+": scale-2-1", since(start), "one scale-down step with the operator crashing at "+step)
	checkMembership(f, ec, 1)
	checkObjects(f, name, 1, nodeCount(f))
	// The removed member's PVC must be gone too (the operator deletes it once the member left).
	pvcs, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Poll("removed member's PVC gone", time.Minute, func(ctx context.Context) (bool, string, error) {
		pvcs, err = f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
		if err != nil {
			return false, err.Error(), nil
		}
		want := 1
		if memory {
			want = 0
		}
		return len(pvcs.Items) == want, fmt.Sprintf("%d PVCs", len(pvcs.Items)), nil
	}); err != nil {
		t.Error(err)
	}
	obs.check(f, clusterID)
	crashes := failpointExits(f, armed)
	t.Logf("operator exited %d time(s) with code %d at %s", crashes, failpoint.ExitCode, step)
	f.Record("crash-"+step, since(flowStart), fmt.Sprintf("whole flow (create 2, scale to 1); the operator exited %d time(s) at %s", crashes, step))
	if crashes == 0 {
		t.Errorf("the failpoint %s never fired: the flow did not cross that step", step)
	}
}

// armFailpoint sets ETCD_OPERATOR_FAILPOINT=step on the operator Deployment, waits for the
// rollout, and registers a cleanup that removes it again and waits for the operator to be
// available. It returns the time the new Pods started from.
func armFailpoint(f *framework.Test, step string) time.Time {
	f.T.Helper()
	d, err := f.OperatorDeployment(f.Ctx)
	if err != nil {
		f.T.Fatal(err)
	}
	container := d.Spec.Template.Spec.Containers[0].Name
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"env":[{"name":%q,"value":%q}]}]}}}}`,
		container, failpoint.EnvVar, step)
	armed := time.Now()
	f.T.Cleanup(func() { disarmFailpoint(f, d.Name, container) })
	if err := patchOperator(context.Background(), f, d.Name, patch); err != nil {
		f.T.Fatal(err)
	}
	if err := waitOperatorRolled(f.Ctx, f, d.Name); err != nil {
		f.T.Fatal(err)
	}
	return armed
}

func disarmFailpoint(f *framework.Test, deployment, container string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"env":[{"name":%q,"$patch":"delete"}]}]}}}}`,
		container, failpoint.EnvVar)
	if err := patchOperator(ctx, f, deployment, patch); err != nil {
		f.T.Errorf("removing %s from the operator: %v", failpoint.EnvVar, err)
		return
	}
	if err := waitOperatorRolled(ctx, f, deployment); err != nil {
		f.T.Errorf("operator after removing %s: %v", failpoint.EnvVar, err)
	}
}

func patchOperator(ctx context.Context, f *framework.Test, name, patch string) error {
	_, err := f.Kube.AppsV1().Deployments(framework.OperatorNamespace).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patching operator Deployment: %w", err)
	}
	return nil
}

// waitOperatorRolled waits until the operator Deployment's rollout finished (waitRolled).
func waitOperatorRolled(ctx context.Context, f *framework.Test, name string) error {
	return waitRolled(ctx, f, framework.OperatorNamespace, name)
}

// waitRolled waits until a Deployment's rollout finished: its latest template observed, every
// replica updated and available, and no Pod of an older template left.
func waitRolled(ctx context.Context, f *framework.Test, namespace, name string) error {
	return framework.Poll(ctx, "rollout of "+namespace+"/"+name, 3*time.Minute, framework.DefaultPollInterval, func(ctx context.Context) (bool, string, error) {
		d, err := f.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want,
			fmt.Sprintf("gen %d observed %d replicas %d updated %d available %d", d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas), nil
	})
}

// failpointExits counts the operator's exits with the failpoint code since armed: the restart
// count of the Pods created after arming whose last termination was exit 77 (each restart of
// an armed operator is a failpoint exit unless something else killed it; the last state
// distinguishes).
func failpointExits(f *framework.Test, armed time.Time) int {
	f.T.Helper()
	return failpointExitsCtx(f.Ctx, f, armed)
}

func failpointExitsCtx(ctx context.Context, f *framework.Test, armed time.Time) int {
	pods, err := f.Kube.CoreV1().Pods(framework.OperatorNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range pods.Items {
		if p.CreationTimestamp.Time.Before(armed.Add(-time.Second)) {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			if term := c.LastTerminationState.Terminated; term != nil && term.ExitCode == failpoint.ExitCode {
				n += int(c.RestartCount)
			}
		}
	}
	return n
}

// TestOperatorCrashAfterSpecChange crashes the operator at a step of a scale flow that follows a
// spec change on a converged cluster (scale 1 → 2, scale 2 → 1) and expects the flow to converge
// at the new size without churning members: no member of the old size removed by a scale-up, no
// member created by a scale-down.
//
// It is the regression test of a crash-safety bug found here: the pass that adopted the new spec
// (status.observed ← spec) acted on it at once, while the adoption was only written by the
// deferred status patch at the end of the pass. A crash right after the action (the victim's
// removal-reason annotation, MemberRemove, the EtcdMember delete, the PVC delete, or a member
// create) lost the adoption while the action persisted; the restarted operator, seeing a world
// that was not converged, did not adopt the pending generation, finished the action and then
// drove the cluster back to the old size (observed for removal-reason-set: members removed in
// turn with reason ScaleDown, each followed by MemberCreated/LearnerAdded/LearnerPromoted of a
// fresh member, observedGeneration stuck at 1 with generation 2 pending) — a remove/add loop
// while the failpoint stayed armed, and a needless member replacement after a single crash. The
// adoption is now its own step: its status patch (failpoint spec-adopted) is written and the
// pass ends before anything acts on the new target. The envtest counterpart is
// TestCrashAfterSpecChange in test/integration/etcdcluster.
func TestOperatorCrashAfterSpecChange(t *testing.T) {
	only := strings.Split(os.Getenv(envFailpoints), ",")
	for _, tc := range []struct {
		step     string
		from, to int
	}{
		{failpoint.SpecAdopted, 1, 2},
		{failpoint.MemberCreated, 1, 2},
		{failpoint.LearnerAdded, 1, 2},
		{failpoint.SpecAdopted, 2, 1},
		{failpoint.RemovalReasonSet, 2, 1},
		{failpoint.MemberRemoved, 2, 1},
		{failpoint.MemberDeleted, 2, 1},
		{failpoint.PVCDeleted, 2, 1},
	} {
		t.Run(fmt.Sprintf("%s-scale-%d-%d", tc.step, tc.from, tc.to), func(t *testing.T) {
			if os.Getenv(envFailpoints) != "" && !slices.Contains(only, tc.step) {
				t.Skipf("%s=%s", envFailpoints, os.Getenv(envFailpoints))
			}
			labels := []framework.Label{framework.Disruptive}
			if tc.step == failpoint.RemovalReasonSet {
				labels = append(labels, framework.Smoke) // the scale-down flow's crash in the smoke set
			}
			f := framework.NewTest(t, labels...)
			requireOperator(f)
			const name = "crash"
			createCluster(f, newCluster(f, name, int32(tc.from)))
			ec := waitConverged(f, name, tc.from, bootstrapTimeout)
			clusterID := ec.Status.ClusterID
			before := checkMembership(f, ec, tc.from)
			armed := armFailpoint(f, tc.step)
			obs := observeMembership(f, name)
			start := time.Now()
			setReplicas(f, name, int32(tc.to))
			ec = waitConvergedOr(f, name, tc.to, crashTimeout, func(ctx context.Context) error {
				if n := failpointExitsCtx(ctx, f, armed); n > maxCrashes {
					return fmt.Errorf("the operator exited %d times at %s without the scale %d→%d converging (livelock: the adoption of the new spec is lost with each crash)", n, tc.step, tc.from, tc.to)
				}
				return nil
			})
			f.Record(fmt.Sprintf("crash-%s: scale-%d-%d", tc.step, tc.from, tc.to), since(start), "scale after a spec change, operator crashing at "+tc.step)
			after := checkMembership(f, ec, tc.to)
			obs.check(f, clusterID)
			small, large := after, before
			if tc.to > tc.from {
				small, large = before, after
			}
			for m := range small {
				if _, ok := large[m]; !ok {
					t.Errorf("member churn: %s is in the %d-member set %v but not in the %d-member set %v", m, len(small), small, len(large), large)
				}
			}
			if failpointExits(f, armed) == 0 {
				t.Errorf("the failpoint %s never fired", tc.step)
			}
		})
	}
}
