package etcdcluster_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// testGuardImage stands in for the operator's own image, which holds the data-dir guard.
const testGuardImage = "registry.example.test/etcd-operator:test"

// TestStagedJoins: with the data-dir guard in the Pod template, every new member of a bootstrap
// and of a scale-up is staged (docs/design/membership-flows.md, "Staged joins"): at the moment of
// its MemberAddAsLearner it has its initial cluster already, so its Pod was being built before
// the add. For Memory members (whose data lives in the Pod) nothing is staged: the etcd fake
// starts nothing for a peer it does not list, and no Memory member's Pod runs before its add.
func TestStagedJoins(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.guardImage = testGuardImage
	w.startController()
	var mu sync.Mutex
	staged := map[string]bool{}
	net0.onAdd(w.fake("staged"), func(peerURLs []string) {
		ms, err := w.members(context.Background(), "staged")
		if err != nil {
			t.Error(err)
			return
		}
		for _, m := range ms {
			if slices.Contains(peerURLs, desired.PeerURL(&m)) {
				mu.Lock()
				staged[m.Name] = m.Spec.InitialCluster != ""
				mu.Unlock()
			}
		}
	})
	w.newCluster("staged", 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("staged", 3))
	w.setReplicas("staged", 5)
	wait.Eventually(t, convergeTimeout, "5 members", w.converged("staged", 5))
	ms, err := w.members(t.Context(), "staged")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range ms {
		if wasStaged, added := staged[m.Name]; added == m.Spec.Bootstrap || (added && !wasStaged) {
			t.Errorf("%s (seed %t): added by MemberAddAsLearner %t, with its initial cluster already %t; want every joiner added staged",
				m.Name, m.Spec.Bootstrap, added, wasStaged)
		}
	}
	checkNoDuplicateAdds(t, w.fake("staged").Mutations())

	memory := newWorld(t)
	memory.guardImage = testGuardImage
	memory.startController()
	if err := memory.createCluster(&etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: memory.ns, Name: "memory"},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Medium: etcdv1alpha2.StorageMediumMemory, Size: ptr.To(resource.MustParse("1Gi"))}},
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "3 Memory members", memory.converged("memory", 3))
	if held := memory.heldMembers(); len(held) != 0 {
		t.Errorf("Memory members whose Pods ran before their add: %v, want none", held)
	}
}
