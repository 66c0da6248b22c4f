//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// nodeLostTimeout bounds a stopped node to the replacement of its member: NotReady after ~20 s,
// the Pod marked for deletion after its toleration, its 30 s termination grace, the operator's
// terminating grace, then a replacement.
const nodeLostTimeout = 8 * time.Minute

// TestNodeLostMemberReplaced stops the node of one member of a 3-member PVC cluster (its kubelet
// and container runtime, as a lost machine) under write traffic. The Pod is marked for deletion
// by the taint manager once the node is NotReady (the cluster tolerates not-ready/unreachable
// for 5 s only, so the test does not wait Kubernetes' default 300 s) and stays Terminating;
// after the operator's terminating grace the member is Healthy=False/NodeLost and replaced under
// a new identity, never force-deleted (docs/design/healing.md, "Classification"). When the node
// returns, the old identity cannot rejoin: etcd never lists its ID again, and its old Pod, if it
// runs, is not a member. Records node-lost-heal (node stopped → converged; target: replacement
// started ≤ 6 min).
//
// It shortens the operator's graces through their flags' environment variables (the operator
// restarts twice: with them and without them). Not smoke, not parallel: a stopped node stops
// every other scenario's members on it, and the operator's restarts would disturb them too.
func TestNodeLostMemberReplaced(t *testing.T) {
	f := framework.NewTest(t, framework.Disruptive)
	requireOperator(f)
	f.RequireNodeFaults() // skips here, before the operator is changed, when there are none
	setOperatorEnv(f, map[string]string{
		"ETCD_OPERATOR_TERMINATING_GRACE":    "20s",
		"ETCD_OPERATOR_NODE_LOST_GRACE":      "20s",
		"ETCD_OPERATOR_MEMBER_FAILURE_GRACE": "60s",
	})
	const name = "nodelost"
	ec := newCluster(f, name, 3)
	for _, taint := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		ec.Spec.Tolerations = append(ec.Spec.Tolerations, corev1.Toleration{
			Key: taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5),
		})
	}
	r := startHeal(f, ec)
	victim := pickMember(f, name, pickAwayFromOperator)
	pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(f.Ctx, victim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	restart := f.StopNode(pod.Spec.NodeName)
	waitReplaced(f, name, victim, nodeLostTimeout)
	r.hist.logStatusHealed(f, "node-lost-heal", start)
	f.Record("node-lost-heal", since(start), "node stopped → its member NodeLost after the shortened graces (terminating 20 s) → replaced, 3 voters Ready, Available=True/QuorumHealthy (target: replacement started ≤ 6 min with default graces)")
	r.hist.requireReplacedFor(f, victim, health.ReasonNodeLost)

	restart()
	oldIdentityStaysOut(f, name, victim, r.before[victim], pod.UID)
	r.finishReplaced(f, "node of one member stopped, member replaced, node back", victim)
}

// oldIdentityStaysOut waits, after the lost node came back, until the replaced member's old Pod
// is gone (the kubelet finishes the deletion it was asked for), checking meanwhile that etcd
// never lists the old member ID again.
func oldIdentityStaysOut(f *framework.Test, name, member, oldID string, oldPod types.UID) {
	f.T.Helper()
	err := f.Poll("old Pod of "+member+" gone, its ID never back in etcd", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		if ml, err := memberList(ctx, f, name); err == nil {
			for _, m := range ml.Members {
				if hexID(m.ID) == oldID {
					return false, "", fmt.Errorf("etcd lists the replaced member %s (%s) again after its node returned", member, oldID)
				}
			}
		}
		p, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, member, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, "", nil
		case err != nil:
			return false, errState(ctx, err), nil
		case p.UID != oldPod:
			return false, "", fmt.Errorf("a new Pod %s (uid %s) runs under the replaced member's name", member, p.UID)
		}
		return false, fmt.Sprintf("old Pod phase %s, deletionTimestamp %v", p.Status.Phase, p.DeletionTimestamp), nil
	})
	if err != nil {
		f.T.Error(err)
	}
}

// setOperatorEnv sets environment variables on the operator's container (each flag has one:
// ETCD_OPERATOR_<FLAG>, see internal/operator), waits for the rollout, and registers a cleanup
// that removes them again and waits for the operator to be available.
func setOperatorEnv(f *framework.Test, env map[string]string) {
	f.T.Helper()
	d, err := f.OperatorDeployment(f.Ctx)
	if err != nil {
		f.T.Fatal(err)
	}
	container := d.Spec.Template.Spec.Containers[0].Name
	var set, unset []string
	for _, k := range sortedKeys(env) {
		set = append(set, fmt.Sprintf(`{"name":%q,"value":%q}`, k, env[k]))
		unset = append(unset, fmt.Sprintf(`{"name":%q,"$patch":"delete"}`, k))
	}
	patch := func(vars []string) string {
		return fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"env":[%s]}]}}}}`, container, strings.Join(vars, ","))
	}
	f.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := patchOperator(ctx, f, d.Name, patch(unset)); err != nil {
			f.T.Errorf("removing %v from the operator: %v", sortedKeys(env), err)
			return
		}
		if err := waitOperatorRolled(ctx, f, d.Name); err != nil {
			f.T.Errorf("operator after removing %v: %v", sortedKeys(env), err)
		}
	})
	if err := patchOperator(f.Ctx, f, d.Name, patch(set)); err != nil {
		f.T.Fatal(err)
	}
	if err := waitOperatorRolled(f.Ctx, f, d.Name); err != nil {
		f.T.Fatal(err)
	}
}
