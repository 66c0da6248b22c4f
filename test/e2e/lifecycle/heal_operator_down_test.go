//go:build e2e

package lifecycle

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestOperatorDownWhileMemoryMemberLost stops the operator (scaled to 0), then deletes a Memory
// member's Pod under write traffic: the cluster must stay writable with 2 of 3 members and no
// operator (acknowledged writes continue), nothing replaces the member meanwhile, and once the
// operator is back it replaces the member and the cluster converges (same cluster ID, HashKV
// equal, 0 acknowledged writes lost). Records heal-after-operator-return (operator scaled back
// → converged) and operator-return (scaled back → Deployment available).
//
// Not parallel: it stops the one operator every other scenario depends on.
func TestOperatorDownWhileMemoryMemberLost(t *testing.T) {
	f := framework.NewTest(t, framework.Smoke, framework.Disruptive)
	requireOperator(f)
	const name = "opdown"
	ec := newCluster(f, name, 3)
	ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	// Traffic and watches; this scenario runs no membership observer.
	r := newHealRun(f, ec)
	r.load = startLoad(f, name)
	r.hist = watchHistory(f, name)

	restore := f.StopOperator()
	lost := pickMember(f, name, pickAny)
	pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(f.Ctx, lost, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.DeletePod(f.Ctx, f.Namespace, lost, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitForPodGone(f.Ctx, f.Namespace, lost, pod.UID, podGoneTimeout); err != nil {
		t.Fatal(err)
	}
	// Writable without the operator: a quorum of 2 serves.
	waitAcked(f, r.load.gen, r.load.acked()+50)
	members, err := listMembers(f.Ctx, f, name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(members, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == lost }) {
		t.Errorf("EtcdMember %s is gone while the operator is stopped: something else acted", lost)
	}

	returned := time.Now()
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	f.Record("operator-return", since(returned), "operator scaled 0 → 1 → Deployment available")
	waitReplaced(f, name, lost, healTimeout)
	r.hist.logStatusHealed(f, "heal-after-operator-return", returned)
	f.Record("heal-after-operator-return", since(returned), "operator scaled back while a Memory member was lost → replaced, converged with 3 voters")
	r.hist.requireReplacedFor(f, lost, health.ReasonDataLost)
	r.finishReplaced(f, "Memory member lost while the operator was stopped, replaced after it returned", lost)
}
