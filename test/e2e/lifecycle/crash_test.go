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

	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// envFailpoints narrows TestOperatorCrash to a comma-separated list of failpoint names.
const envFailpoints = "E2E_FAILPOINTS"

// crashSteps are the step boundaries TestOperatorCrash crashes the operator at, in flow order:
// bootstrap (seed), scale up (each added member) and scale down (the removed member). Each is
// reached at least once by the scenario's flow (create 2 members, then scale to 1). leader-moved
// is left out: the victim ranking removes a follower first, so a 2 → 1 scale-down never moves
// leadership; orphan-removed needs a stray learner, member-status-patched recurs on every
// member status write (a crash loop whose back-off outgrows any sensible timeout), and
// dormant-set/member-woken belong to pause/resume.
var crashSteps = []struct {
	step  string
	smoke bool
}{
	{failpoint.SeedCreated, false},
	{failpoint.SeedVoterStamped, false},
	{failpoint.SeedInitialClusterPatched, false},
	{failpoint.ClusterIDLatched, false},
	{failpoint.MemberCreated, false},
	{failpoint.LearnerAdded, true},
	{failpoint.LearnerInitialClusterPatched, false},
	{failpoint.LearnerPromoted, false},
	{failpoint.RemovalReasonSet, false},
	{failpoint.MemberRemoved, false},
	{failpoint.MemberDeleted, false},
	{failpoint.PVCDeleted, false},
}

// crashTimeout bounds each flow under a crashing operator: every crash costs a container
// restart with kubelet back-off (10 s, 20 s, ...) and a leader-election takeover.
const crashTimeout = 8 * time.Minute

// TestOperatorCrash crashes the operator (exit 77 through ETCD_OPERATOR_FAILPOINT on its
// Deployment) right after one step of the bootstrap, scale-up or scale-down flow, every time
// the step recurs, and checks that the flow still converges: a 2-member cluster is created
// (seed bootstrap, then one member added as learner and promoted), then scaled to 1. Throughout,
// at most one learner and no duplicate member are observed; at the end etcd's members are
// exactly the EtcdMembers (no orphan), the cluster ID never changed, and the failpoint fired.
// The env var is removed afterwards (also when the test fails).
//
// Not parallel: the failpoint applies to the one operator, so it would crash every other
// scenario's flows too. Only learner-added is in the smoke set.
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
			crashFlow(f, tc.step)
		})
	}
}

func crashFlow(f *framework.Test, step string) {
	t := f.T
	armed := armFailpoint(f, step)
	const name = "crash"
	flowStart := time.Now()
	start := flowStart
	createCluster(f, newCluster(f, name, 2))
	obs := observeMembership(f, name)
	ec := waitConverged(f, name, 2, crashTimeout)
	f.Record("crash-"+step+": create-2", since(start), "bootstrap + one scale-up step with the operator crashing at "+step)
	clusterID := ec.Status.ClusterID
	checkMembership(f, ec, 2)
	start = time.Now()
	setReplicas(f, name, 1)
	ec = waitConverged(f, name, 1, crashTimeout)
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
		return len(pvcs.Items) == 1, fmt.Sprintf("%d PVCs", len(pvcs.Items)), nil
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

// waitOperatorRolled waits until the Deployment's rollout finished: its latest template observed,
// every replica updated and available, and no Pod of an older template left.
func waitOperatorRolled(ctx context.Context, f *framework.Test, name string) error {
	return framework.Poll(ctx, "operator rollout", 3*time.Minute, framework.DefaultPollInterval, func(ctx context.Context) (bool, string, error) {
		d, err := f.Kube.AppsV1().Deployments(framework.OperatorNamespace).Get(ctx, name, metav1.GetOptions{})
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
	pods, err := f.Kube.CoreV1().Pods(framework.OperatorNamespace).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
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

