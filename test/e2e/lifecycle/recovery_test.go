//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestQuorumLossRecoveredAutomatically is issue #15's story and its 3 → 5 twin, under write
// traffic (docs/design/quorum-recovery.md): a Memory cluster with an even number of voters (2,
// the window of every bootstrap and 1 → 3 growth; 4, the window of 3 → 5) loses exactly half of
// them, and replicas is raised at the same moment, as the growth would have it. The survivors
// hold every acknowledged write, so the operator recovers by itself: it serves again, grows to
// the new target, keeps the cluster ID and the survivor's member ID, and no acknowledged write
// is lost (linearizable history). Records quorum-recovery-serving-<n> (loss → the first writes
// acknowledged again, target ≤ 20 s) and quorum-recovery-converged-<n>.
func TestQuorumLossRecoveredAutomatically(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		voters, target int32
	}{
		{"qrec2", 2, 3},
		{"qrec4", 4, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := framework.NewTest(t, framework.Smoke)
			requireOperator(f)
			ec := newCluster(f, tc.name, tc.voters)
			ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
			createCluster(f, ec)
			got := waitConverged(f, tc.name, int(tc.voters), bootstrapTimeout)
			before := checkMembership(f, got, int(tc.voters))
			load := startLoad(f, tc.name)
			hist := watchHistory(f, tc.name)

			names := sortedKeys(before)
			lost := names[:tc.voters/2]
			survivors := names[tc.voters/2:]
			acked := load.acked()
			start := loseTogether(f, lost)
			setReplicas(f, tc.name, tc.target)
			waitAcked(f, load.gen, acked+20)
			f.Record(fmt.Sprintf("quorum-recovery-serving-%d", tc.voters), since(start),
				fmt.Sprintf("%d of %d Memory voters lost → writes acknowledged again (automatic recovery; target ≤ 20 s)", len(lost), tc.voters))
			waitConverged(f, tc.name, int(tc.target), healTimeout)
			f.Record(fmt.Sprintf("quorum-recovery-converged-%d", tc.voters), since(start),
				fmt.Sprintf("%d of %d Memory voters lost → recovered and grown to %d voters", len(lost), tc.voters, tc.target))
			hist.stop()
			hist.log(f, lost...)

			after := requireHealed(f, tc.name, int(tc.target), got.Status.ClusterID)
			recoveredFrom := requireRecoveryEvents(f, tc.name)
			if !slices.Contains(survivors, recoveredFrom) || after[recoveredFrom] != before[recoveredFrom] {
				t.Errorf("recovered from %q (ID after %s, before %s), want one of the survivors %v with its member ID kept", recoveredFrom, after[recoveredFrom], before[recoveredFrom], survivors)
			}
			for _, m := range lost {
				if _, ok := after[m]; ok {
					t.Errorf("lost member %s is still in etcd: %v", m, after)
				}
			}
			load.verify(f, fmt.Sprintf("%d of %d Memory voters lost; recovered automatically", len(lost), tc.voters))
		})
	}
}

// TestQuorumLossNeedsApproval loses 2 of 3 Memory members: the survivor may lack writes only
// the lost members had, so nothing happens by itself. The cluster says Degraded=True/QuorumLost
// and waits; a stale approval value is refused (Warning RecoveryApprovalIgnored, the condition
// names the value it would take); the exact value starts an approved recovery, after which the
// cluster serves again at 3 members with every key written before the loss (those written
// while the survivor was a voter of a healthy cluster and had applied them).
func TestQuorumLossNeedsApproval(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "qapprove"
	ec := newCluster(f, name, 3)
	ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	createCluster(f, ec)
	got := waitConverged(f, name, 3, bootstrapTimeout)
	before := checkMembership(f, got, 3)
	cli, _ := dialVoters(f, name)
	for i := range 100 {
		if _, err := cli.Put(f.Ctx, fmt.Sprintf("before-loss-%03d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	names := sortedKeys(before)
	survivor, lost := names[0], names[1:]
	waitApplied(f, survivor, "before-loss-099")
	start := loseTogether(f, lost)
	waitCondition(f, name, etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, "QuorumLost", healTimeout)
	f.Record("quorum-lost-guarded-reported", since(start), "2 of 3 Memory members lost → Degraded=True/QuorumLost, no automatic action")
	holdWithoutRecovery(f, name, 15*time.Second)

	applied := survivorApplied(f, survivor)
	value := membership.ApprovalValue(got.Status.ClusterID, survivor, applied)
	stale := membership.ApprovalValue(got.Status.ClusterID, survivor, applied-1)
	annotateApproval(f, name, stale)
	waitDegradedSays(f, name, "does not match the current candidate")
	waitEvent(f, "RecoveryApprovalIgnored", stale)
	holdWithoutRecovery(f, name, 5*time.Second)

	approved := time.Now()
	annotateApproval(f, name, value)
	waitConverged(f, name, 3, healTimeout)
	f.Record("quorum-recovery-approved-converged", since(approved), "approved recovery from 1 of 3 → converged at 3")
	after := requireHealed(f, name, 3, got.Status.ClusterID)
	if after[survivor] != before[survivor] {
		t.Errorf("survivor %s has ID %s after recovery, %s before", survivor, after[survivor], before[survivor])
	}
	if from := requireRecoveryEvents(f, name); from != survivor {
		t.Errorf("recovered from %s, approved %s", from, survivor)
	}
	cli, _ = dialVoters(f, name)
	resp, err := cli.Get(f.Ctx, "before-loss-", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 100 {
		t.Errorf("keys written before the loss after recovery: %v (%v), want 100", resp, err)
	}
	ec2, err := getCluster(f.Ctx, f, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ec2.Annotations[etcdv1alpha2.AnnotationApproveRecovery]; ok || ec2.Status.QuorumRecovery != nil {
		t.Errorf("after recovery: approval %q, status.quorumRecovery %+v; want both cleared", ec2.Annotations[etcdv1alpha2.AnnotationApproveRecovery], ec2.Status.QuorumRecovery)
	}
}

// loseTogether loses the Memory members at one instant: their etcd processes are stopped
// (SIGSTOP) first, then their Pods deleted. Deleting the Pods one after the other would let the
// operator replace the first while the rest still formed a quorum (an e2e run of the 4-voter
// case did exactly that), and the scenario would test an ordinary replacement. It returns when
// the first process stopped.
func loseTogether(f *framework.Test, members []string) time.Time {
	f.T.Helper()
	signals := f.RequireContainerSignals()
	start := time.Now()
	for _, m := range members {
		if err := signals.SignalContainer(f.Ctx, f.Namespace, m, "etcd", "SIGSTOP"); err != nil {
			f.T.Fatal(err)
		}
	}
	for _, m := range members {
		if err := f.DeletePod(f.Ctx, f.Namespace, m, nil); err != nil {
			f.T.Fatal(err)
		}
	}
	return start
}

// requireRecoveryEvents checks that QuorumRecoveryStarted and QuorumRecoveryCompleted were
// emitted on the cluster and returns the member the completion names.
func requireRecoveryEvents(f *framework.Test, name string) string {
	f.T.Helper()
	evs := clusterEvents(f, name)
	var from string
	for _, reason := range []string{"QuorumRecoveryStarted", "QuorumRecoveryCompleted"} {
		i := slices.IndexFunc(evs, func(e corev1.Event) bool { return e.Reason == reason })
		if i < 0 {
			f.T.Fatalf("no %s Event on EtcdCluster %s; events: %v", reason, name, evs)
		}
		if reason == "QuorumRecoveryCompleted" {
			// "recovered from <member> (<mode>) at raft index N: ..."
			if _, rest, ok := strings.Cut(evs[i].Message, "recovered from "); ok {
				from, _, _ = strings.Cut(rest, " ")
			}
			if !strings.Contains(evs[i].Message, "raft index") {
				f.T.Errorf("%s does not name the raft index: %q", reason, evs[i].Message)
			}
		}
	}
	return from
}

func clusterEvents(f *framework.Test, name string) []corev1.Event {
	f.T.Helper()
	list, err := f.Kube.CoreV1().Events(f.Namespace).List(f.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		f.T.Fatal(err)
	}
	return list.Items
}

func waitEvent(f *framework.Test, reason, contains string) {
	f.T.Helper()
	err := f.Poll("Event "+reason, time.Minute, func(ctx context.Context) (bool, string, error) {
		list, err := f.Kube.CoreV1().Events(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, e := range list.Items {
			if e.Reason == reason && strings.Contains(e.Message, contains) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events", len(list.Items)), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// holdWithoutRecovery fails if a recovery starts (status.quorumRecovery) within d.
func holdWithoutRecovery(f *framework.Test, name string, d time.Duration) {
	f.T.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ec, err := getCluster(f.Ctx, f, name)
		if err == nil && ec.Status.QuorumRecovery != nil {
			f.T.Fatalf("a recovery started without approval: %+v", ec.Status.QuorumRecovery)
		}
		time.Sleep(time.Second)
	}
}

func waitDegradedSays(f *framework.Test, name, want string) {
	f.T.Helper()
	err := f.Poll("Degraded saying "+want, time.Minute, func(ctx context.Context) (bool, string, error) {
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range ec.Status.Conditions {
			if c.Type == etcdv1alpha2.ConditionDegraded && strings.Contains(c.Message, want) {
				return true, "", nil
			}
		}
		return false, clusterState(ec), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

func annotateApproval(f *framework.Test, name, value string) {
	f.T.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, etcdv1alpha2.AnnotationApproveRecovery, value)
	ec := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}}
	if err := kc(f).Patch(f.Ctx, ec, client.RawPatch(types.MergePatchType, patch)); err != nil {
		f.T.Fatal(err)
	}
}

// survivorApplied asks the member's own etcd for its applied index through its Pod IP.
func survivorApplied(f *framework.Test, member string) uint64 {
	f.T.Helper()
	c := memberClient(f, member)
	st, err := c.Status(f.Ctx, c.Endpoints()[0])
	if err != nil {
		f.T.Fatal(err)
	}
	return st.RaftAppliedIndex
}

// waitApplied waits until member serves key from its own state (a serializable read).
func waitApplied(f *framework.Test, member, key string) {
	f.T.Helper()
	c := memberClient(f, member)
	err := f.Poll(member+" applied "+key, time.Minute, func(ctx context.Context) (bool, string, error) {
		resp, err := c.Get(ctx, key, clientv3.WithSerializable())
		return err == nil && resp.Count == 1, fmt.Sprint(err), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}
