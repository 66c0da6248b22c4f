//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// crashLoopTimeout bounds a crash loop to its replacement: 3 restarts take about 30 s of
// kubelet back-off (10 s, 20 s), memberFailureGrace is 3 minutes.
const crashLoopTimeout = 6 * time.Minute

// crashLoopPoll is how often killOnEveryStart looks for a restarted container: well below the
// ~2 s a restarted etcd needs to pass its startup and readiness probes, so the member is killed
// before it is Ready again, as a process that crashes on start would be.
const crashLoopPoll = 100 * time.Millisecond

// TestCrashLoopMemberReplaced kills one PVC member's etcd container every time it starts, under
// write traffic: an unclassified crash loop (SIGKILL leaves no fatal pattern). After ≥ 3
// restarts within 10 minutes (or memberFailureGrace not Ready) the member is
// Healthy=False/CrashLoop and replaced (docs/design/healing.md, "Classification"). Records
// crashloop-heal (first kill → converged; target: replacement started ≤ 4 min).
// Not smoke: the kubelet's back-off alone makes it a minute long.
func TestCrashLoopMemberReplaced(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	containers := f.RequireContainerFaults()
	const name = "crashloop"
	r := startHeal(f, newCluster(f, name, 3))
	victim := pickMember(f, name, pickFollower)
	start := time.Now()
	kills := killOnEveryStart(f, containers, victim, crashLoopTimeout)
	waitReplaced(f, name, victim, crashLoopTimeout)
	r.hist.logStatusHealed(f, "crashloop-heal", start)
	f.Record("crashloop-heal", since(start), fmt.Sprintf("etcd killed on every start (%d kills) → Healthy=False/CrashLoop → replaced, converged with 3 voters (target: replacement started ≤ 4 min)", kills))
	r.hist.requireReplacedFor(f, victim, health.ReasonCrashLoop)
	r.finishReplaced(f, "crash-looping member replaced", victim)
}

// killOnEveryStart kills the member's etcd container each time it runs again, until the operator
// marks the member for removal (removal-reason) or it is gone, and returns how many kills it
// took.
func killOnEveryStart(f *framework.Test, containers framework.ContainerFaults, member string, timeout time.Duration) int {
	f.T.Helper()
	kills := 0
	lastKilled := ""
	err := framework.Poll(f.Ctx, member+" crash-looping until marked for replacement", timeout, crashLoopPoll, func(ctx context.Context) (bool, string, error) {
		m := &etcdv1alpha2.EtcdMember{}
		err := kc(f).Get(ctx, types.NamespacedName{Namespace: f.Namespace, Name: member}, m)
		switch {
		case apierrors.IsNotFound(err):
			return true, "", nil
		case err != nil:
			return false, errState(ctx, err), nil
		case m.Annotations[etcdv1alpha2.AnnotationRemovalReason] != "" || m.DeletionTimestamp != nil:
			return true, "", nil
		}
		pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, member, metav1.GetOptions{})
		if err != nil {
			return false, errState(ctx, err), nil
		}
		for _, st := range pod.Status.ContainerStatuses {
			if st.Name != desired.ContainerName || st.State.Running == nil || st.ContainerID == lastKilled {
				continue
			}
			if err := containers.KillContainer(ctx, f.Namespace, member, desired.ContainerName); err != nil {
				return false, errState(ctx, err), nil
			}
			lastKilled = st.ContainerID
			kills++
		}
		return false, fmt.Sprintf("%d kills; member Healthy %v", kills, meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy)), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return kills
}
