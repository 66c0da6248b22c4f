package etcdcluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// newMemoryCluster creates an EtcdCluster of replicas Memory members.
func (w *world) newMemoryCluster(name string, replicas int32) {
	w.t.Helper()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: &replicas, Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Medium: etcdv1alpha2.StorageMediumMemory, Size: ptrQuantity("256Mi")}},
	}
	if err := k8s.Create(w.t.Context(), c); err != nil {
		w.t.Fatalf("creating EtcdCluster %s: %v", name, err)
	}
}

func ptrQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// surgeObserver records, at every observation, the most etcd members and learners seen.
type surgeObserver struct {
	w                   *world
	mu                  sync.Mutex
	maxMembers, maxLrns int
	stop, done          chan struct{}
}

func (w *world) observeSurge(t *testing.T) *surgeObserver {
	t.Helper()
	o := &surgeObserver{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for {
			select {
			case <-o.stop:
				return
			case <-time.After(pollInterval):
			}
			ms := w.real.snapshot()
			l := 0
			for _, m := range ms {
				if m.IsLearner {
					l++
				}
			}
			o.mu.Lock()
			o.maxMembers, o.maxLrns = max(o.maxMembers, len(ms)), max(o.maxLrns, l)
			o.mu.Unlock()
		}
	}()
	t.Cleanup(o.finish)
	return o
}

func (o *surgeObserver) finish() {
	select {
	case <-o.stop:
	default:
		close(o.stop)
	}
	<-o.done
}

// TestRollingUpdateMemorySurge rolls a CPU request on Memory clusters of real etcd members,
// 3 members and 1: every member is replaced by a new one with the new template, added before
// the old one is removed (never more than target+1 members, never two learners), so that the
// key written before the roll survives on every new member, including the 1 → 2 → 1 case.
func TestRollingUpdateMemorySurge(t *testing.T) {
	t.Parallel()
	for _, n := range []int32{3, 1} {
		t.Run(fmt.Sprintf("%d members", n), func(t *testing.T) {
			t.Parallel()
			w := newRealWorld(t)
			w.startController()
			name := fmt.Sprintf("mem%d", n)
			w.newMemoryCluster(name, n)
			wait.Eventually(t, realConvergeTimeout, "bootstrap of real Memory members", w.converged(name, int(n)))
			old := memberIDs(t, w, name)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if _, err := w.real.client(t).Put(ctx, readoptKey, readoptValue); err != nil {
				t.Fatalf("writing a key: %v", err)
			}
			o := w.observeSurge(t)

			w.setCPURequest(name, "150m")
			wait.Eventually(t, rollTimeout, "rolled by surge", func() error {
				if err := w.converged(name, int(n))(); err != nil {
					return err
				}
				now := memberIDs(t, w, name)
				for m := range now {
					if _, ok := old[m]; ok {
						return fmt.Errorf("member %s is still there: %w", m, errNotYet)
					}
				}
				return nil
			})
			o.finish()
			if o.maxMembers > int(n)+1 || o.maxLrns > 1 {
				t.Errorf("at most %d etcd members and %d learners at once, want ≤ %d and ≤ 1", o.maxMembers, o.maxLrns, n+1)
			}
			for m := range memberIDs(t, w, name) {
				cli := w.real.clientOf(t, w.real.clientURL(name, m))
				resp, err := cli.Get(t.Context(), readoptKey, clientv3.WithSerializable())
				if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != readoptValue {
					t.Errorf("new member %s does not serve the key written before the roll: %v %v", m, resp, err)
				}
			}
		})
	}
}
