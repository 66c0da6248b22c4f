//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// unschedulableLabelDomain prefixes the node label the scenario selects on; the namespace makes
// the key unique, so two runs against one cluster never satisfy each other's selector.
const unschedulableLabelDomain = "unschedulable.e2e.etcd-operator.cozystack.io/"

// TestUnschedulableMemberReported creates a 1-member cluster whose spec.nodeSelector matches no
// node. The member's Ready condition must quote the scheduler at once; once the Pod has been
// unschedulable for the operator's pending grace (5 min, docs/design/healing.md, "Classification"),
// the member must be Healthy=False/Unschedulable and the cluster Degraded=True/MemberUnschedulable
// naming the member and the scheduler's message, announced by one MemberFailed Warning on each.
// Then one node gets the label: the Pod schedules, the cluster converges and is no longer Degraded.
// Not in the smoke set: the grace alone takes five minutes.
func TestUnschedulableMemberReported(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	const name = "unsched"
	key := unschedulableLabelDomain + f.Namespace
	ec := newCluster(f, name, 1)
	ec.Spec.NodeSelector = map[string]string{key: "true"}
	start := time.Now()
	createCluster(f, ec)

	pod := waitUnschedulablePod(f, name)
	f.Record("unschedulable-ready-message", since(start), "create → EtcdMember Ready quotes the scheduler (PodScheduled=False/Unschedulable)")
	scheduler := podScheduledMessage(pod)

	member := waitDegradedUnschedulable(f, name, scheduler)
	f.Record("unschedulable-degraded", since(start), "create → Degraded=True/MemberUnschedulable (pending grace 5 min)")
	for _, obj := range []string{name, member} {
		if n := eventCount(f, obj, "MemberFailed"); n != 1 {
			t.Errorf("%d MemberFailed Events regarding %s, want 1 for one transition", n, obj)
		}
	}

	node := labelOneNode(f, key)
	start = time.Now()
	waitConverged(f, name, 1, bootstrapTimeout)
	ec = waitCondition(f, name, etcdv1alpha2.ConditionDegraded, metav1.ConditionFalse, "QuorumHealthy", time.Minute)
	f.Record("unschedulable-recovery", since(start), "node "+node+" labelled → converged, Degraded=False")
	m := &etcdv1alpha2.EtcdMember{}
	if err := kc(f).Get(f.Ctx, types.NamespacedName{Namespace: f.Namespace, Name: member}, m); err != nil {
		t.Fatal(err)
	}
	if h := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy); h == nil || h.Status != metav1.ConditionTrue {
		t.Errorf("member %s Healthy = %+v after it was scheduled, want True", member, h)
	}
	t.Logf("recovered: %s", clusterState(ec))

	start = time.Now()
	deleteCluster(f, name)
	waitNothingLeft(f, name, false)
	f.Record("unschedulable-delete", since(start), "delete → members, Pods, Services, PDB, PVCs gone")
}

// waitUnschedulablePod waits for the cluster's member Pod to be reported unschedulable by the
// scheduler and for its EtcdMember's Ready condition to quote that report.
func waitUnschedulablePod(f *framework.Test, name string) *corev1.Pod {
	f.T.Helper()
	var pod *corev1.Pod
	err := f.Poll("EtcdMember Ready quotes the scheduler", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		ms, err := listMembers(ctx, f, name)
		if err != nil || len(ms) != 1 {
			return false, fmt.Sprintf("%d EtcdMembers (%v)", len(ms), err), nil
		}
		p, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, ms[0].Name, metav1.GetOptions{})
		if err != nil {
			return false, "Pod: " + err.Error(), nil
		}
		msg := podScheduledMessage(p)
		if msg == "" {
			return false, "Pod " + p.Name + " phase " + string(p.Status.Phase) + ", not reported unschedulable", nil
		}
		r := meta.FindStatusCondition(ms[0].Status.Conditions, etcdv1alpha2.ConditionReady)
		if r == nil || r.Status != metav1.ConditionFalse || !strings.Contains(r.Message, "unschedulable: "+msg) {
			return false, fmt.Sprintf("member Ready = %+v, scheduler says %q", r, msg), nil
		}
		pod = p
		return true, "", nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return pod
}

// waitDegradedUnschedulable waits for Healthy=False/Unschedulable on the member and
// Degraded=True/MemberUnschedulable on the cluster, both quoting scheduler, and returns the
// member's name.
func waitDegradedUnschedulable(f *framework.Test, name, scheduler string) string {
	f.T.Helper()
	var member string
	err := f.Poll("Degraded=True/MemberUnschedulable", health.DefaultPendingGrace+3*time.Minute, func(ctx context.Context) (bool, string, error) {
		ms, err := listMembers(ctx, f, name)
		if err != nil || len(ms) != 1 {
			return false, fmt.Sprintf("%d EtcdMembers (%v)", len(ms), err), nil
		}
		member = ms[0].Name
		h := meta.FindStatusCondition(ms[0].Status.Conditions, etcdv1alpha2.ConditionHealthy)
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		d := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionDegraded)
		state := fmt.Sprintf("member Healthy %+v; %s", h, clusterState(ec))
		ok := h != nil && h.Status == metav1.ConditionFalse && h.Reason == health.ReasonUnschedulable && strings.Contains(h.Message, scheduler) &&
			d != nil && d.Status == metav1.ConditionTrue && d.Reason == health.DegradedMemberUnschedulable &&
			strings.Contains(d.Message, "member "+member+": ") && strings.Contains(d.Message, scheduler)
		if ok {
			f.T.Logf("Degraded message: %s", d.Message)
		}
		return ok, state, nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return member
}

// podScheduledMessage is the scheduler's message when it reports the Pod unschedulable.
func podScheduledMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

// labelOneNode labels one Ready node with key=true and removes the label when the test ends.
func labelOneNode(f *framework.Test, key string) string {
	f.T.Helper()
	nodes, err := f.Kube.CoreV1().Nodes().List(f.Ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		f.T.Fatalf("listing nodes: %d, %v", len(nodes.Items), err)
	}
	node := nodes.Items[0].Name
	for _, n := range nodes.Items {
		if nodeReady(&n) {
			node = n.Name
			break
		}
	}
	patch := func(ctx context.Context, value string) error {
		body := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, key, value)
		_, err := f.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	f.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := patch(ctx, "null"); err != nil {
			f.T.Errorf("removing label %s from node %s: %v", key, node, err)
		}
	})
	if err := patch(f.Ctx, `"true"`); err != nil {
		f.T.Fatalf("labelling node %s: %v", node, err)
	}
	return node
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// eventCount counts the occurrences of Events of reason regarding the object named name in the
// test namespace; an Event folded into a series counts once per occurrence.
func eventCount(f *framework.Test, name, reason string) int {
	f.T.Helper()
	evs, err := f.Kube.CoreV1().Events(f.Namespace).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.InvolvedObject.Name != name || e.Reason != reason {
			continue
		}
		switch {
		case e.Series != nil && e.Series.Count > 0:
			n += int(e.Series.Count)
		case e.Count > 0:
			n += int(e.Count)
		default:
			n++
		}
	}
	return n
}
