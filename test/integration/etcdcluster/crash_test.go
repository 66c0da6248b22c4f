package etcdcluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
)

// crashTimeout bounds one phase of a crash scenario.
const crashTimeout = 60 * time.Second

// crashDriver runs reconcilers by hand, as an operator process would: one "life" is a Reconciler
// with an empty memory and uncached reads (the coldest possible cache). When the armed failpoint
// is reached, that life's goroutine is parked forever — like a killed process it writes nothing
// more, not even its deferred status patch — and the next pass runs in a new life. Its passes
// carry a failpoint.Set of their own, so crash tests run in parallel, each in its namespace.
type crashDriver struct {
	t       *testing.T
	w       *world
	req     ctrl.Request
	life    *etcdcluster.Reconciler
	points  failpoint.Set
	hits    chan string
	lives   int
	reached map[string]bool
	// maxCrashes, when above 0, bounds the crashes until fails: more mean the flow reaches the
	// armed step again on every pass without progressing (a livelock under a recurring crash).
	maxCrashes int
}

func newCrashDriver(t *testing.T, w *world, cluster string) *crashDriver {
	t.Helper()
	d := &crashDriver{t: t, w: w, req: ctrl.Request{NamespacedName: client.ObjectKey{Namespace: w.ns, Name: cluster}},
		hits: make(chan string, 1), reached: map[string]bool{}}
	d.restart()
	t.Cleanup(d.disarm)
	return d
}

func (d *crashDriver) restart() {
	d.lives++
	opts := append([]etcdcluster.Option{etcdcluster.WithResyncJitter(noJitter), etcdcluster.WithOrphanMemberGrace(time.Second)}, d.w.controllerOptions()...)
	d.life = etcdcluster.New(k8s, k8s, &events.FakeRecorder{}, d.w.pool, opts...)
}

// arm makes the first hit of step crash the current life.
func (d *crashDriver) arm(step string) {
	d.points.SetAction(step, func(s string) {
		d.points.Disarm()
		d.hits <- s
		select {} // a dead process does nothing more
	})
}

// disarm clears the armed step.
func (d *crashDriver) disarm() { d.points.Disarm() }

// armEvery makes every hit of step crash the current life, as ETCD_OPERATOR_FAILPOINT does to
// the operator process each time it restarts: the step stays armed until the test ends.
func (d *crashDriver) armEvery(step string, maxCrashes int) {
	d.maxCrashes = maxCrashes
	d.points.SetAction(step, func(s string) {
		d.hits <- s
		select {} // a dead process does nothing more
	})
}

// pass runs one reconcile in the current life; a crash starts the next life.
func (d *crashDriver) pass() error {
	done := make(chan error, 1)
	ctx := failpoint.NewContext(context.Background(), &d.points)
	go func() {
		_, err := d.life.Reconcile(ctx, d.req)
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
		if n := d.w.fake(d.req.Name).MostLearners(); n > 1 {
			d.t.Fatalf("etcd listed %d learners at once", n)
		}
		if d.maxCrashes > 0 && d.lives-1 > d.maxCrashes {
			d.t.Fatalf("%s: the reconciler crashed %d times without progressing: it reaches the armed step again on every pass (livelock): %v",
				what, d.lives-1, check())
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
func TestCrashConsistency(t *testing.T) {
	t.Parallel()
	for _, step := range failpoint.Names {
		if step == failpoint.AlarmDisarmed || step == failpoint.TemplateAuthorised {
			continue // only a replacement (TestCrashDuringReplacement) or a roll (TestCrashDuringRoll) reaches it
		}
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			if step != failpoint.LearnerInitialClusterPatched {
				// Members are staged, as in production; only an unstaged join patches a
				// learner's initial cluster after its add.
				w.guardImage = testGuardImage
			}
			name := "crash"
			w.newCluster(name, 3)
			d := newCrashDriver(t, w, name)
			d.arm(step)

			d.until("bootstrap of 3", w.converged(name, 3))
			if slices.Contains(readoptSteps, step) {
				crashReadopt(t, w, d, name, step)
				return
			}
			if step == failpoint.OrphanRemoved {
				// A learner nobody explains, as left by an add whose member was then deleted.
				if _, err := w.fake(name).PlantLearner("http://stray." + name + "." + w.ns + ".svc:2380"); err != nil {
					t.Fatal(err)
				}
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
			checkNoDuplicateAdds(t, w.fake(name).Mutations())
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
	id, err := etcdclient.ParseID(newest.Status.MemberID)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.fake(name).Elect(id); err != nil {
		t.Fatal(err)
	}
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
func checkNoDuplicateAdds(t *testing.T, calls []etcdfake.Call) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range calls {
		if c.Method != etcdfake.MemberAddAsLearner {
			continue
		}
		if seen[c.Arg] {
			t.Errorf("duplicate add: %s (calls %v)", c, calls)
		}
		seen[c.Arg] = true
	}
}

// recurringCrashes bounds the crashes of a flow whose failpoint stays armed: each step is reached
// at most once per member a flow adds or removes.
const recurringCrashes = 3

// TestCrashEveryTimeAtSeedVoterStamped keeps seed-voter-stamped armed across restarts, as the
// operator's environment variable does: the pass after the crash must not hit the hook again
// (its stamp is already there, so it writes nothing), or bootstrap never gets past B2.
func TestCrashEveryTimeAtSeedVoterStamped(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	name := "stamp"
	w.newCluster(name, 2)
	d := newCrashDriver(t, w, name)
	d.armEvery(failpoint.SeedVoterStamped, recurringCrashes)

	d.until("bootstrap of 2", w.converged(name, 2))
	if !d.reached[failpoint.SeedVoterStamped] {
		t.Errorf("failpoint %s was never reached", failpoint.SeedVoterStamped)
	}
}

// TestCrashAfterSpecChange changes the size of a converged cluster with a failpoint of the
// scale flow armed across restarts. The new spec must stay adopted through the crash: the
// cluster converges at the new size with exactly the membership changes the change asks for — no
// member of the old size removed by a scale-up, none added by a scale-down.
func TestCrashAfterSpecChange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		step     string
		from, to int32
	}{
		{failpoint.SpecAdopted, 1, 2},
		{failpoint.MemberCreated, 1, 2},
		{failpoint.LearnerAdded, 1, 2},
		{failpoint.SpecAdopted, 2, 1},
		{failpoint.RemovalReasonSet, 2, 1},
		{failpoint.MemberRemoved, 2, 1},
		{failpoint.MemberDeleted, 2, 1},
		{failpoint.PVCDeleted, 2, 1},
	} {
		t.Run(fmt.Sprintf("%s-scale-%d-%d", tc.step, tc.from, tc.to), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			name := "change"
			w.newCluster(name, tc.from)
			d := newCrashDriver(t, w, name)
			d.until(fmt.Sprintf("bootstrap of %d", tc.from), w.converged(name, int(tc.from)))
			before := memberNames(t, w, name)
			done := len(w.fake(name).Mutations())

			d.armEvery(tc.step, recurringCrashes)
			w.setReplicas(name, tc.to)
			d.until(fmt.Sprintf("scale %d→%d", tc.from, tc.to), w.converged(name, int(tc.to)))
			after := memberNames(t, w, name)

			small, large := after, before
			if tc.to > tc.from {
				small, large = before, after
			}
			for m := range small {
				if !large[m] {
					t.Errorf("member churn: %s is among the %d members %v but not among the %d members %v", m, len(small), small, len(large), large)
				}
			}
			adds, removes := distinctMembershipCalls(w.fake(name).Mutations()[done:])
			wantAdds, wantRemoves := max(int(tc.to-tc.from), 0), max(int(tc.from-tc.to), 0)
			if len(adds) != wantAdds || len(removes) != wantRemoves {
				t.Errorf("etcd saw %d adds and %d removes, want %d and %d: %v", len(adds), len(removes), wantAdds, wantRemoves, w.fake(name).Mutations()[done:])
			}
			if !d.reached[tc.step] {
				t.Errorf("failpoint %s was never reached", tc.step)
			}
		})
	}
}

// memberNames returns the names of cluster's EtcdMembers.
func memberNames(t *testing.T, w *world, cluster string) map[string]bool {
	t.Helper()
	ms, err := w.members(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range ms {
		out[m.Name] = true
	}
	return out
}

// TestCrashDuringReplacement kills the reconciler at every step of a replacement, every time it
// reaches it: etcd raises CORRUPT for the leader, which must lose leadership, be removed through
// the quorum gate, lose its EtcdMember and PVC, be replaced by a new learner that is promoted,
// and have its alarm disarmed. Converged at 3 without the corrupt member, exactly one removal
// and one add reach etcd, and no alarm is left.
func TestCrashDuringReplacement(t *testing.T) {
	t.Parallel()
	for _, step := range []string{
		failpoint.LeaderMoved, failpoint.RemovalReasonSet, failpoint.MemberRemoved, failpoint.MemberDeleted,
		failpoint.PVCDeleted, failpoint.AlarmDisarmed, failpoint.MemberCreated, failpoint.LearnerAdded,
		failpoint.LearnerInitialClusterPatched, failpoint.LearnerPromoted,
	} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			name := "replace"
			w.newCluster(name, 3)
			d := newCrashDriver(t, w, name)
			d.until("bootstrap of 3", w.converged(name, 3))
			f := w.fake(name)
			corrupt := f.Leader()
			var victim string
			for _, m := range f.Members() {
				if m.ID == corrupt {
					victim = m.Name
				}
			}
			done := len(f.Mutations())

			d.armEvery(step, recurringCrashes)
			f.RaiseAlarm(etcdclient.Alarm{MemberID: corrupt, Type: etcdclient.AlarmCorrupt})
			d.until("corrupt leader replaced", func() error {
				if err := w.converged(name, 3)(); err != nil {
					return err
				}
				if memberNames(t, w, name)[victim] {
					return fmt.Errorf("%s is still an EtcdMember: %w", victim, errNotYet)
				}
				if a := f.Alarms(); len(a) > 0 {
					return fmt.Errorf("alarms %v: %w", a, errNotYet)
				}
				return nil
			})
			adds, removes := distinctMembershipCalls(f.Mutations()[done:])
			if len(adds) != 1 || len(removes) != 1 || !removes[etcdclient.FormatID(corrupt)] {
				t.Errorf("etcd saw adds %v and removes %v, want one add and the removal of %s: %v", adds, removes, etcdclient.FormatID(corrupt), f.Mutations()[done:])
			}
			if !d.reached[step] {
				t.Errorf("failpoint %s was never reached", step)
			}
		})
	}
}

// distinctMembershipCalls are the distinct adds (by peer URLs) and removes (by member ID) among
// calls: a retry of a call etcd refused is the same change.
func distinctMembershipCalls(calls []etcdfake.Call) (adds, removes map[string]bool) {
	adds, removes = map[string]bool{}, map[string]bool{}
	for _, c := range calls {
		switch c.Method {
		case etcdfake.MemberAddAsLearner:
			adds[c.Arg] = true
		case etcdfake.MemberRemove:
			removes[c.Arg] = true
		}
	}
	return adds, removes
}
