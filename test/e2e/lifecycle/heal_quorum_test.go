//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// quorumLossHold is how long TestQuorumLossKeepsData keeps 2 of 3 members down. The operator
// reacts to a lost Pod in the pass the Pod's deletion triggers; a hold of several seconds lets
// every pass that event causes, and the retries of the refused Pod creates, run in the
// quorum-lost state, where any destructive step would show. Time-based rules (graces of a
// minute or more) are not exercised by it.
const quorumLossHold = 15 * time.Second

// TestQuorumLossKeepsData takes 2 of the 3 members of a PVC cluster down under write traffic
// (their Pods deleted, and kept from coming back for quorumLossHold by an admission policy that
// refuses to create Pods of those names: framework.DenyPodCreates) and checks the "quorum lost,
// data intact" row of docs/design/healing.md, "Total loss": while they are down the EtcdCluster
// says Available=False/QuorumLost and Degraded=True/QuorumLost, and nothing destructive happens
// (no EtcdMember deleted or annotated removal-reason, no PVC deleted, etcd's membership
// unchanged, as the watches and the surviving member report it). Once the Pods may be created
// again: converged with the same member names and IDs, the same PVCs, the same cluster ID,
// HashKV equal, no acknowledged write lost. Records quorum-lost-reported (Pods deleted →
// QuorumLost) and quorum-lost-heal (quota lifted → converged).
func TestQuorumLossKeepsData(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "qlost"
	r := newHealRun(f, newCluster(f, name, 3))
	membersBefore, pvcsBefore := memberUIDs(f, name), f.PVCUIDs(podSelector(name))
	r.start(f)
	q := quorumLoss{name: name, survivor: pickMember(f, name, pickAny), before: r.before}
	for m := range r.before {
		if m != q.survivor {
			q.down = append(q.down, m)
		}
	}
	slices.Sort(q.down)
	start, lift := q.takeDown(f)
	ec := waitCondition(f, name, etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse, "QuorumLost", healTimeout)
	f.Record("quorum-lost-reported", since(start), "2 of 3 PVC members' Pods deleted → Available=False/QuorumLost")
	if !condIs(ec.Status.Conditions, etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, "QuorumLost") {
		t.Errorf("with quorum lost: %s, want Degraded=True/QuorumLost", clusterState(ec))
	}
	q.hold(f)

	lifted := time.Now()
	lift()
	waitConverged(f, name, 3, healTimeout)
	f.Record("quorum-lost-heal", since(lifted), "Pods may be created again → converged with the same 3 members (includes the operator's retry back-off for the refused creates)")
	f.Record("quorum-lost-outage", since(start), fmt.Sprintf("2 of 3 Pods deleted → converged, %s of it held down", quorumLossHold))
	r.obs.check(f, r.clusterID)
	r.hist.stop()
	r.hist.log(f, q.down...)
	if d := r.hist.destructive(); len(d) > 0 {
		t.Errorf("destructive changes while quorum was lost with the data intact (docs/design/healing.md, \"Total loss\": none): %v", d)
	}
	after := requireHealed(f, name, 3, r.clusterID)
	if !maps.Equal(r.before, after) {
		t.Errorf("members after the outage %v, before %v: want the same names and IDs", after, r.before)
	}
	if got := memberUIDs(f, name); !maps.Equal(got, membersBefore) {
		t.Errorf("EtcdMembers after the outage %v, before %v: want the same objects", got, membersBefore)
	}
	if got := f.PVCUIDs(podSelector(name)); !maps.Equal(got, pvcsBefore) {
		t.Errorf("PVCs after the outage %v, before %v: want the same claims", got, pvcsBefore)
	}
	r.load.verify(f, "2 of 3 members down (quorum lost, data intact), then back")
}

// quorumLoss is the fault of TestQuorumLossKeepsData: every member of cluster name but survivor
// down.
type quorumLoss struct {
	name     string
	survivor string
	// down are the members taken down, by name.
	down []string
	// before are the member IDs by name before the fault.
	before map[string]string
}

// takeDown makes the admission policy refuse Pods of the down members (framework.DenyPodCreates),
// deletes their Pods and waits until they are gone. It returns when the deletions began and the
// function that lifts the refusal.
func (q quorumLoss) takeDown(f *framework.Test) (start time.Time, lift func()) {
	f.T.Helper()
	pods := f.PodUIDs(podSelector(q.name))
	lift = f.DenyPodCreates(q.down...)
	start = time.Now()
	for _, m := range q.down {
		if err := f.DeletePod(f.Ctx, f.Namespace, m, nil); err != nil {
			f.T.Fatal(err)
		}
	}
	for _, m := range q.down {
		if err := f.WaitForPodGone(f.Ctx, f.Namespace, m, pods[m], podGoneTimeout); err != nil {
			f.T.Fatal(err)
		}
	}
	return start, lift
}

// hold watches the cluster for quorumLossHold while the down members' Pods stay refused, and
// fails at once if a down member got a Pod (the hold did not hold), the cluster stopped saying
// Available=False/QuorumLost, or the survivor's member list changed.
func (q quorumLoss) hold(f *framework.Test) {
	f.T.Helper()
	start := time.Now()
	samples := 0
	err := f.Poll(fmt.Sprintf("%s of quorum loss", quorumLossHold), quorumLossHold+time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, m := range q.down {
			if _, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, m, metav1.GetOptions{}); err == nil {
				return false, "", fmt.Errorf("member %s has a Pod again during the hold: the admission policy did not keep it down", m)
			}
		}
		ec, err := getCluster(ctx, f, q.name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		if !condIs(ec.Status.Conditions, etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse, "QuorumLost") {
			return false, "", fmt.Errorf("with 2 of 3 members down: %s, want Available=False/QuorumLost throughout", clusterState(ec))
		}
		if err := sameMembership(ctx, f, q.survivor, q.before); err != nil {
			return false, "", err
		}
		samples++
		return time.Since(start) >= quorumLossHold, fmt.Sprintf("%d samples", samples), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// sameMembership asks the member's own etcd (serializable: it has no quorum) for the member
// list and compares it with want (names → IDs).
func sameMembership(ctx context.Context, f *framework.Test, member string, want map[string]string) error {
	pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, member, metav1.GetOptions{})
	if err != nil || pod.Status.PodIP == "" {
		return nil // a transient read; the next sample decides
	}
	ml, err := memberListAt(ctx, "http://"+pod.Status.PodIP+":2379")
	if err != nil {
		return nil
	}
	got := map[string]string{}
	for _, m := range ml.Members {
		got[peerName(firstOr(m.PeerURLs))] = hexID(m.ID)
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("etcd's member list at %s is %v, was %v: membership changed while quorum was lost", member, got, want)
	}
	return nil
}
