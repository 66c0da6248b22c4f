package etcdcluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// realConvergeTimeout bounds the bootstrap of a cluster of real etcd processes: three starts
// and etcd's own 5 s strict-reconfiguration wait, on a loaded machine.
const realConvergeTimeout = 2 * convergeTimeout

// readoptFixture is a converged cluster of 3 real etcd members with a key written.
type readoptFixture struct {
	w       *world
	name    string
	ids     map[string]string    // etcd member ID by member name
	uids    map[string]types.UID // EtcdMember UID by name
	pvcs    map[string]types.UID // PVC UID by member name
	cluster uint64               // etcd's cluster ID
	done    int                  // membership changes before the deletion
}

const readoptKey, readoptValue = "readopt/key", "written before the deletion"

func newReadoptFixture(t *testing.T, name string) *readoptFixture {
	t.Helper()
	w := newRealWorld(t)
	w.startController()
	w.newCluster(name, 3)
	wait.Eventually(t, realConvergeTimeout, "bootstrap of 3 real members", w.converged(name, 3))
	f := &readoptFixture{w: w, name: name, ids: memberIDs(t, w, name), uids: map[string]types.UID{}, pvcs: map[string]types.UID{}}
	ms, err := w.members(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		f.uids[m.Name] = m.UID
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: desired.PVCName(m.Name)}, pvc); err != nil {
			t.Fatal(err)
		}
		f.pvcs[m.Name] = pvc.UID
	}
	cli := w.real.client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, readoptKey, readoptValue); err != nil {
		t.Fatalf("writing a key: %v", err)
	}
	f.cluster = clusterID(ctx, t, cli)
	f.done = len(w.real.mutations())
	return f
}

// check asserts that the members came back: same names, member IDs, PVCs and cluster ID, new
// EtcdMember UIDs for the deleted ones, every member serving the key from its own data, no
// membership change since the deletion, and one MemberReadopted Event per deleted member.
func (f *readoptFixture) check(t *testing.T, deleted ...string) {
	t.Helper()
	w := f.w
	wait.Eventually(t, realConvergeTimeout, "every member re-adopted", w.readopted(f.name, f.ids))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ms, err := w.members(ctx, f.name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: desired.PVCName(m.Name)}, pvc); err != nil {
			t.Fatal(err)
		}
		if pvc.UID != f.pvcs[m.Name] {
			t.Errorf("member %s runs on a new PVC (UID %s, was %s)", m.Name, pvc.UID, f.pvcs[m.Name])
		}
		if want := slices.Contains(deleted, m.Name); (m.UID != f.uids[m.Name]) != want {
			t.Errorf("member %s: UID %s, was %s; re-created: want %v", m.Name, m.UID, f.uids[m.Name], want)
		}
		if slices.Contains(deleted, m.Name) {
			f.checkStartedOnData(t, m)
		}
		// A serializable read answers from the member's own store, without the leader.
		cli := w.real.clientOf(t, w.real.clientURL(f.name, m.Name))
		resp, err := cli.Get(ctx, readoptKey, clientv3.WithSerializable())
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != readoptValue {
			t.Errorf("member %s does not serve the key written before the deletion: %v %v", m.Name, resp, err)
		}
	}
	if got := clusterID(ctx, t, w.real.client(t)); got != f.cluster {
		t.Errorf("etcd cluster ID %x, was %x", got, f.cluster)
	}
	if calls := w.real.mutations()[f.done:]; len(calls) > 0 {
		t.Errorf("re-adoption changed etcd's membership: %v", calls)
	}
	wait.Eventually(t, convergeTimeout, "one MemberReadopted Event per deleted member", func() error {
		var list eventsv1.EventList
		if err := k8s.List(ctx, &list, client.InNamespace(w.ns)); err != nil {
			return err
		}
		got := map[string]int{}
		for _, e := range list.Items {
			if e.Reason == "MemberReadopted" && e.Regarding.Kind == "EtcdCluster" && e.Related != nil {
				got[e.Related.Name]++
			}
		}
		for _, n := range deleted {
			if got[n] != 1 {
				return fmt.Errorf("MemberReadopted Events by member: %v, want one for each of %v: %w", got, deleted, errNotYet)
			}
		}
		return nil
	})
}

// checkStartedOnData asserts that re-adopted member m's own Pod started etcd on its data.
// Converged can be seen while the deleted member's old Pod still serves (nothing collects it at
// once in envtest), so it first waits for m's own Pod.
func (f *readoptFixture) checkStartedOnData(t *testing.T, m etcdv1alpha2.EtcdMember) {
	t.Helper()
	wait.Eventually(t, realConvergeTimeout, "the Pod of re-adopted member "+m.Name+" started", f.w.runsOwnPod(m))
	if !f.w.real.startedOnData(m.Name) {
		t.Errorf("the Pod of re-adopted member %s started etcd on an empty data directory", m.Name)
	}
}

// runsOwnPod waits until member m's Pod is owned by m itself (not by the member it re-adopted
// from) and Ready.
func (w *world) runsOwnPod(m etcdv1alpha2.EtcdMember) func() error {
	return func() error {
		pod := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: m.Name}, pod); err != nil {
			return fmt.Errorf("Pod %s: %w: %w", m.Name, err, errNotYet)
		}
		if owner := metav1.GetControllerOf(pod); owner == nil || owner.UID != m.UID {
			return fmt.Errorf("Pod %s is not yet owned by EtcdMember %s: %w", m.Name, m.UID, errNotYet)
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("Pod %s is not Ready: %w", m.Name, errNotYet)
	}
}

func clusterID(ctx context.Context, t *testing.T, cli *clientv3.Client) uint64 {
	t.Helper()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("listing members: %v", err)
	}
	return resp.Header.ClusterId
}

// TestForceDeletedMemberReadopted runs both controllers over real etcd processes and deletes
// one EtcdMember past its finalizer, as a deletion that bypassed the guard would: etcd still
// lists the member, so it is re-created under its name and comes back with its etcd member ID
// and its data, instead of being replaced by a new, empty member.
func TestForceDeletedMemberReadopted(t *testing.T) {
	t.Parallel()
	f := newReadoptFixture(t, "one")
	names := slices.Sorted(maps.Keys(f.ids))
	forceDelete(t, f.w, names[1])
	f.check(t, names[1])
}

// TestAllForceDeletedMembersReadopted force-deletes every EtcdMember of a cluster of 3 real etcd
// processes: etcd no longer answers (no Pod is left), so each PVC is re-adopted in turn, until
// enough members run to form a quorum and etcd's member list names the rest. The cluster comes
// back with the same cluster ID, member IDs and data.
func TestAllForceDeletedMembersReadopted(t *testing.T) {
	t.Parallel()
	f := newReadoptFixture(t, "all")
	names := slices.Sorted(maps.Keys(f.ids))
	forceDelete(t, f.w, names...)
	f.check(t, names...)
}
