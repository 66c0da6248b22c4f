package etcdcluster_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestQuorumLossRecoveredInTheTwoVoterWindow runs both controllers against a real API server on
// issue #15's story: a Memory cluster of 2 voters loses the second one's Pod (quorum lost: its
// data went with it) while replicas goes to 3. The survivor holds every acknowledged write, so
// the operator records the recovery, stops the others, asks the survivor's guard (played by the
// fake kubelet) for one forced start, removes the lost member and grows to 3: same cluster ID,
// the survivor's member ID kept, the record and the Pod annotation cleared, both Events, and at
// most one learner at any time.
func TestQuorumLossRecoveredInTheTwoVoterWindow(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.kubeletOnly = true
	w.startController(etcdcluster.WithLogTailReader(w.logTail))
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "qrec"},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](2), Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Medium: etcdv1alpha2.StorageMediumMemory, Size: ptr.To(resource.MustParse("1Gi"))}},
	}
	if err := w.createCluster(c); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "2 members", w.converged("qrec", 2))
	clusterID := w.cluster("qrec").Status.ClusterID
	w.mu.Lock()
	w.clusterIDs = map[string]string{"qrec": clusterID}
	w.mu.Unlock()
	before, err := w.members(t.Context(), "qrec")
	if err != nil || len(before) != 2 {
		t.Fatalf("members before: %d, %v", len(before), err)
	}
	i := slices.IndexFunc(before, func(m etcdv1alpha2.EtcdMember) bool { return !m.Spec.Bootstrap })
	lost, survivor := before[i], before[1-i]

	pod := &corev1.Pod{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: lost.Name}, pod); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	// envtest deletes an unscheduled Pod at once, so the fake kubelet never sees it go: stop its
	// etcd here, as its node would.
	stopEtcd(w.fake("qrec"), desired.PeerURL(&lost))
	w.setReplicas("qrec", 3)

	wait.Eventually(t, convergeTimeout, "recovered and grown to 3", func() error {
		if err := w.converged("qrec", 3)(); err != nil {
			return fmt.Errorf("%w; conditions %v; recovery %+v; etcd %v", err, w.cluster("qrec").Status.Conditions, w.cluster("qrec").Status.QuorumRecovery, w.fake("qrec").Members())
		}
		ms, err := w.members(t.Context(), "qrec")
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.Name == lost.Name {
				return fmt.Errorf("lost member %s still exists", lost.Name)
			}
		}
		return nil
	})
	got := w.cluster("qrec")
	if got.Status.ClusterID != clusterID || got.Status.QuorumRecovery != nil {
		t.Errorf("after recovery: cluster ID %s (was %s), quorumRecovery %+v (want none)", got.Status.ClusterID, clusterID, got.Status.QuorumRecovery)
	}
	after, err := w.members(t.Context(), "qrec")
	if err != nil {
		t.Fatal(err)
	}
	if j := slices.IndexFunc(after, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == survivor.Name }); j < 0 || after[j].Status.MemberID != survivor.Status.MemberID {
		t.Errorf("survivor %s (ID %s) not kept with its ID: %v", survivor.Name, survivor.Status.MemberID, names(after))
	}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: survivor.Name}, pod); err != nil {
		t.Fatal(err)
	}
	if v, ok := pod.Annotations[etcdv1alpha2.AnnotationForceNewCluster]; ok {
		t.Errorf("the survivor's Pod still carries %s=%s", etcdv1alpha2.AnnotationForceNewCluster, v)
	}
	if n := w.fake("qrec").MostLearners(); n > 1 {
		t.Errorf("etcd listed %d learners at once", n)
	}
	wait.Eventually(t, convergeTimeout, "recovery Events", w.eventsOnce("qrec", "QuorumRecoveryStarted", "QuorumRecoveryCompleted"))
	// The members the recovery stops are dormant Memory members without a PVC, which outside a
	// recovery means every member is lost: an earlier run said AllMembersLost here.
	if err := w.eventsOnce("qrec", "AllMembersLost")(); err == nil {
		t.Error("an AllMembersLost Event during the recovery")
	}
}

func names(ms []etcdv1alpha2.EtcdMember) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}
