package etcdcluster_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestAllowDeletionWaitsForQuorum deletes a member of a 3-member cluster whose other members
// include one that is down. The finalizer holds the foreign deletion; allow-deletion turns it
// into a replacement, but removing the member would leave one healthy voter of two, so the
// operator refuses and says why in Progressing, and etcd sees no removal. Once the down member
// is back, the deletion goes ahead and a new member takes its place.
func TestAllowDeletionWaitsForQuorum(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.kubeletOnly = true
	w.startController()
	const name = "allow"
	w.newCluster(name, 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged(name, 3))
	ms, err := w.members(t.Context(), name)
	if err != nil || len(ms) != 3 {
		t.Fatalf("members: %d, %v", len(ms), err)
	}
	down, deleted := ms[0].Name, ms[1].Name
	w.setUnready(down, true)
	wait.Eventually(t, convergeTimeout, down+" seen down", func() error {
		av := meta.FindStatusCondition(w.cluster(name).Status.Conditions, etcdv1alpha2.ConditionAvailable)
		if w.cluster(name).Status.ReadyMembers != 2 {
			return fmt.Errorf("readyMembers %d, Available %+v: %w", w.cluster(name).Status.ReadyMembers, av, errNotYet)
		}
		return nil
	})

	victim := &etcdv1alpha2.EtcdMember{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: deleted}, victim); err != nil {
		t.Fatal(err)
	}
	before := victim.DeepCopy()
	metav1.SetMetaDataAnnotation(&victim.ObjectMeta, etcdv1alpha2.AnnotationAllowDeletion, "true")
	if err := k8s.Patch(t.Context(), victim, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(t.Context(), victim); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "the deletion refused, with the reason", func() error {
		p := meta.FindStatusCondition(w.cluster(name).Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if p == nil || p.Reason != membership.ReasonWaitingForHealthyMembers ||
			!strings.Contains(p.Message, "the deletion of "+deleted) || !strings.Contains(p.Message, "quorum") || !strings.Contains(p.Message, down) {
			return fmt.Errorf("Progressing = %+v: %w", p, errNotYet)
		}
		return nil
	})
	if n := countCalls(w.fake(name), etcdfake.MemberRemove, ""); n != 0 {
		t.Fatalf("%d MemberRemove calls while removing would break quorum: %v", n, w.fake(name).Mutations())
	}

	w.setUnready(down, false)
	wait.Eventually(t, convergeTimeout, "the allowed deletion done and the member replaced", func() error {
		if err := w.converged(name, 3)(); err != nil {
			return err
		}
		if memberNames(t, w, name)[deleted] {
			return fmt.Errorf("%s still exists: %w", deleted, errNotYet)
		}
		return nil
	})
}

// setUnready makes the kubelet keep member name's process down and its Pod not Ready, or
// lets it run again.
func (w *world) setUnready(name string, unready bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.unready == nil {
		w.unready = map[string]bool{}
	}
	w.unready[name] = unready
}
