package etcdcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
)

// crashTimeout bounds one phase of a crash scenario.
const crashTimeout = 60 * time.Second

// crashDriver runs reconcilers by hand, as an operator process would: one "life" is a Reconciler
// with an empty memory and uncached reads (the coldest possible cache). When the armed failpoint
// is reached, that life's goroutine is parked forever — like a killed process it writes nothing
// more, not even its deferred status patch — and the next pass runs in a new life.
type crashDriver struct {
	t       *testing.T
	w       *world
	req     ctrl.Request
	life    *etcdcluster.Reconciler
	hits    chan string
	lives   int
	reached map[string]bool
}

func newCrashDriver(t *testing.T, w *world, cluster string) *crashDriver {
	t.Helper()
	d := &crashDriver{t: t, w: w, req: ctrl.Request{NamespacedName: client.ObjectKey{Namespace: w.ns, Name: cluster}},
		hits: make(chan string, 1), reached: map[string]bool{}}
	d.restart()
	return d
}

func (d *crashDriver) restart() {
	d.lives++
	d.life = etcdcluster.New(k8s, k8s, &events.FakeRecorder{}, d.w.pool,
		etcdcluster.WithResyncJitter(noJitter), etcdcluster.WithOrphanMemberGrace(time.Second))
}

// arm makes the first hit of step crash the current life.
func (d *crashDriver) arm(step string) {
	failpoint.SetAction(step, func(s string) {
		failpoint.Disarm()
		d.hits <- s
		select {} // a dead process does nothing more
	})
}

// pass runs one reconcile in the current life; a crash starts the next life.
func (d *crashDriver) pass() error {
	done := make(chan error, 1)
	go func() {
		_, err := d.life.Reconcile(context.Background(), d.req)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case s := <-d.hits:
		d.reached[s] = true
		d.restart()
		return nil
	}
}

// until drives passes until check holds, asserting the invariants at every observation.
func (d *crashDriver) until(what string, check func() error) {
	d.t.Helper()
	deadline := time.Now().Add(crashTimeout)
	var err error
	for time.Now().Before(deadline) {
		if perr := d.pass(); perr != nil && !strings.Contains(perr.Error(), "conflict") {
			d.t.Logf("pass: %v", perr)
		}
		if n := d.w.fake(d.req.Name).maxLearn; n > 1 {
			d.t.Fatalf("etcd listed %d learners at once", n)
		}
		if err = check(); err == nil {
			return
		}
		time.Sleep(2 * kubeletTick)
	}
	d.t.Fatalf("%s: not reached after %s: %v", what, crashTimeout, err)
}

// TestCrashConsistency kills the reconciler right after each failpoint in turn — after every etcd
// mutation and every Kubernetes write of bootstrap, scale-up, scale-down (leadership moved away
// first), pause and resume — restarts it cold, and checks that the cluster converges with no
// orphan, duplicate, pending or unstarted member and never more than one learner.
//
// Failpoints are process-wide, so this test runs alone: it is not parallel, and Go starts the
// parallel tests of the package only after it returned.
func TestCrashConsistency(t *testing.T) {
	for _, step := range failpoint.Names {
		t.Run(step, func(t *testing.T) {
			w := newWorld(t)
			name := "crash"
			w.newCluster(name, 3)
			d := newCrashDriver(t, w, name)
			d.arm(step)
			t.Cleanup(failpoint.Disarm)

			d.until("bootstrap of 3", w.converged(name, 3))
			if step == failpoint.OrphanRemoved {
				// A learner nobody explains, as left by an add whose member was then deleted.
				w.fake(name).addOrphan("http://stray." + name + "." + w.ns + ".svc:2380")
				d.until("orphan learner removed", w.converged(name, 3))
				if !d.reached[step] {
					t.Errorf("failpoint %s was never reached", step)
				}
				return
			}
			leadAndGoFirst(t, w, name)
			w.setReplicas(name, 1)
			d.until("scale-down to 1", w.converged(name, 1))
			w.setReplicas(name, 0)
			d.until("paused", w.paused(name))
			w.setReplicas(name, 2)
			d.until("resumed to 2", w.converged(name, 2))

			if !d.reached[step] {
				t.Errorf("failpoint %s was never reached", step)
			}
			if d.lives < 2 {
				t.Errorf("the reconciler never crashed")
			}
			checkNoDuplicateAdds(t, w.fake(name).mutations())
		})
	}
}

// leadAndGoFirst makes the newest member lead and asks for it to be removed first: the
// scale-down must move leadership away before removing it.
func leadAndGoFirst(t *testing.T, w *world, name string) {
	t.Helper()
	ms, err := w.members(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	newest := ms[0]
	for _, m := range ms {
		if m.CreationTimestamp.After(newest.CreationTimestamp.Time) || (m.CreationTimestamp.Equal(&newest.CreationTimestamp) && m.Name > newest.Name) {
			newest = m
		}
	}
	w.fake(name).lead(newest.Status.MemberID)
	before := newest.DeepCopy()
	newest.Annotations = map[string]string{etcdv1alpha2.AnnotationRemoveFirst: "test"}
	if err := k8s.Patch(t.Context(), &newest, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// paused checks that one dormant member is left and the invariants hold.
func (w *world) paused(name string) func() error {
	return func() error {
		ms, err := w.members(context.Background(), name)
		if err != nil {
			return err
		}
		if len(ms) != 1 || !ms[0].Spec.Dormant {
			return fmt.Errorf("%d members, want one dormant", len(ms))
		}
		return consistent(w, w.cluster(name))
	}
}

// checkNoDuplicateAdds fails when a peer URL was added twice while it was a member.
func checkNoDuplicateAdds(t *testing.T, calls []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range calls {
		if !strings.HasPrefix(c, "MemberAddAsLearner(") {
			continue
		}
		if seen[c] {
			t.Errorf("duplicate add: %s (calls %v)", c, calls)
		}
		seen[c] = true
	}
}
