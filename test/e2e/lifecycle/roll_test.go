//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Rolling-update scenarios (issue #6, docs/design/rolling-updates.md): a template change reaches
// the running members of a 3-member PVC cluster one at a time, under write traffic, with the same
// member IDs and data. Each records, per member, the time from its old Pod's deletion to its new
// Pod being Ready (rollSampler), the whole roll, and the longest write gap
// (framework.VerifyTraffic); the figures are published next to the targets of
// docs/design/timings.md, "Targets" (per member ≤ 60 s + catch-up, write gap ≤ 2 s), never
// asserted.

// rollTimeout bounds one roll of 3 members: per member a graceful stop, a start, 10 s of
// settling and a catch-up, on a loaded shared machine.
const rollTimeout = 5 * time.Minute

// rollSampler watches a cluster's member Pods while it rolls: for every member, when its Pod
// was first seen going (terminating or replaced) and when a new Pod of it was first seen Ready.
type rollSampler struct {
	mu       sync.Mutex
	initial  map[string]types.UID // member → Pod UID before the roll
	gone     map[string]time.Time
	ready    map[string]time.Time
	order    []string
	maxDown  int
	stopOnce sync.Once
	stopFn   func()
}

func sampleRoll(f *framework.Test, name string) *rollSampler {
	f.T.Helper()
	s := &rollSampler{initial: f.PodUIDs(podSelector(name)), gone: map[string]time.Time{}, ready: map[string]time.Time{}}
	s.stopFn = sampleEvery(f, 100*time.Millisecond, func(ctx context.Context) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
		if err != nil {
			return
		}
		s.add(pods.Items, time.Now())
	})
	f.T.Cleanup(s.stop)
	return s
}

// add takes one listing of the member Pods, made at now.
func (s *rollSampler) add(pods []corev1.Pod, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	down := 0
	for i := range pods {
		p := &pods[i]
		seen[p.Name] = true
		old, known := s.initial[p.Name]
		if !known {
			continue
		}
		replaced := p.UID != old
		if replaced || p.DeletionTimestamp != nil {
			s.goneAt(p.Name, now)
		}
		if !framework.PodReady(p) || p.DeletionTimestamp != nil {
			down++
		}
		if replaced && framework.PodReady(p) && s.ready[p.Name].IsZero() {
			s.ready[p.Name] = now
		}
	}
	for m := range s.initial {
		if !seen[m] {
			down++
			s.goneAt(m, now)
		}
	}
	s.maxDown = max(s.maxDown, down)
}

// goneAt records the first time member m's old Pod was seen going.
func (s *rollSampler) goneAt(m string, now time.Time) {
	if s.gone[m].IsZero() {
		s.gone[m] = now
		s.order = append(s.order, m)
	}
}

func (s *rollSampler) stop() { s.stopOnce.Do(s.stopFn) }

// record stops the sampler, records each member's roll time under prefix-<n> (in roll order)
// and checks that every member was rolled once, one at a time.
func (s *rollSampler) record(f *framework.Test, prefix, what string) {
	f.T.Helper()
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) != len(s.initial) {
		f.T.Errorf("%s: members rolled %v, want every one of %v", what, s.order, slices.Sorted(maps.Keys(s.initial)))
	}
	if s.maxDown > 1 {
		f.T.Errorf("%s: %d member Pods were down at once", what, s.maxDown)
	}
	for i, m := range s.order {
		if s.ready[m].IsZero() {
			f.T.Errorf("%s: the new Pod of %s was never seen Ready", what, m)
			continue
		}
		d := s.ready[m].Sub(s.gone[m]).Round(time.Millisecond)
		f.Record(fmt.Sprintf("%s-%d", prefix, i+1), d, fmt.Sprintf("%s: member %d of 3 (%s), old Pod going → new Pod Ready (target ≤ 60 s + catch-up)", what, i+1, m))
	}
}

// patchSpec applies mutate to the cluster's spec.
func patchSpec(f *framework.Test, name string, mutate func(*etcdv1alpha2.EtcdClusterSpec)) {
	f.T.Helper()
	ec, err := getCluster(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	before := ec.DeepCopy()
	mutate(&ec.Spec)
	if err := kc(f).Patch(f.Ctx, ec, client.MergeFrom(before)); err != nil {
		f.T.Fatalf("patching EtcdCluster %s: %v", name, err)
	}
}

// roll changes the spec of a converged 3-member cluster under way and waits for the roll: the
// same member IDs, every Pod replaced once, one at a time, converged with 3 updated members.
func roll(f *framework.Test, name, prefix, what string, before map[string]string, mutate func(*etcdv1alpha2.EtcdClusterSpec)) {
	f.T.Helper()
	awaitRoll(f, name, prefix, what, "spec patched", before, func() { patchSpec(f, name, mutate) })
}

// awaitRoll runs trigger, which makes the operator roll a converged 3-member cluster, and waits
// for the roll as roll does; cause names what trigger does, for the timing report.
func awaitRoll(f *framework.Test, name, prefix, what, cause string, before map[string]string, trigger func()) {
	f.T.Helper()
	s := sampleRoll(f, name)
	start := time.Now()
	trigger()
	ec := waitConverged(f, name, 3, rollTimeout)
	f.Record(prefix+"-total", since(start), what+": "+cause+" → converged, every member on the new template")
	s.record(f, prefix, what)
	if ec.Status.UpdatedMembers != 3 {
		f.T.Errorf("%s: updatedMembers %d, want 3", what, ec.Status.UpdatedMembers)
	}
	if after := checkMembership(f, ec, 3); !maps.Equal(after, before) {
		f.T.Errorf("%s: members %v, were %v: a member was replaced instead of restarted", what, after, before)
	}
}

// TestRollingUpdateResources changes the CPU request of a 3-member PVC cluster under write
// traffic. Records roll-resources-{1,2,3}, roll-resources-total and write-gap-max.
func TestRollingUpdateResources(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "rollres"
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)

	roll(f, name, "roll-resources", "resources change on 3 PVC members", before, func(s *etcdv1alpha2.EtcdClusterSpec) {
		s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m")}
	})
	requireRunningTemplate(f, name, func(p *corev1.Pod) error {
		if q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "150m" {
			return fmt.Errorf("requests cpu %s", q.String())
		}
		return nil
	})
	obs.check(f, clusterID)
	requireHealed(f, name, 3, clusterID)
	load.verify(f, "resources change rolled across 3 PVC members")
}

// TestRollingUpgradeMinorVersions upgrades a 3-member PVC cluster from etcd 3.5 to 3.6 to 3.7
// under write traffic, one minor at a time as etcd requires. Records roll-3.6-{1,2,3},
// roll-3.7-{1,2,3}, their totals and write-gap-max.
func TestRollingUpgradeMinorVersions(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Upgrade)
	requireOperator(f)
	const name = "rollver"
	ec := newCluster(f, name, 3)
	ec.Spec.Version = "3.5.35"
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)

	for _, v := range []string{"3.6.16", "3.7.3"} {
		minor := v[:strings.LastIndex(v, ".")]
		what := "etcd upgrade to " + v + " on 3 PVC members"
		if v == "3.7.3" {
			// etcd 3.7 cannot parse the v2 entries 3.5 wrote to the raft log: a member that
			// replays such entries from its WAL panics ("unmarshal should never fail") and never
			// starts (docs/e2e-lifecycle.md, finding 9). The operator holds the step until every
			// member has applied a snapshot interval (10,000 entries on 3.6, plus a margin)
			// beyond the index where every member first ran 3.6, then adopts it by itself.
			patchSpec(f, name, func(s *etcdv1alpha2.EtcdClusterSpec) { s.Version = v })
			requireVersionHeld(f, name, "must wait until every member has taken a raft snapshot under 3.6", "3.6.16")
			awaitRoll(f, name, "roll-"+minor, what, "11,500 writes started (the step waits for them)", before, func() { fillLog(f, name, 11_500) })
		} else {
			roll(f, name, "roll-"+minor, what, before, func(s *etcdv1alpha2.EtcdClusterSpec) { s.Version = v })
		}
		requireRunsVersion(f, name, v)
	}
	obs.check(f, clusterID)
	requireHealed(f, name, 3, clusterID)
	load.verify(f, "etcd 3.5 → 3.6 → 3.7 rolled across 3 PVC members")
}

// requireRunsVersion waits for status.runningVersion to reach v and checks that every member
// Pod runs etcd v's image.
func requireRunsVersion(f *framework.Test, name, v string) {
	f.T.Helper()
	err := f.Poll("runningVersion "+v, time.Minute, func(ctx context.Context) (bool, string, error) {
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		return ec.Status.RunningVersion == v, "runningVersion " + ec.Status.RunningVersion, nil
	})
	if err != nil {
		f.T.Error(err)
	}
	requireRunningTemplate(f, name, func(p *corev1.Pod) error {
		if img := p.Spec.Containers[0].Image; !strings.HasSuffix(img, ":v"+v) {
			return fmt.Errorf("image %s", img)
		}
		return nil
	})
}

// requireVersionHeld waits for the operator to refuse the cluster's spec.version with
// Progressing=False/VersionChangeRejected and a message containing rule, and checks that the
// refusal latched nothing: the latched version is still latched.
func requireVersionHeld(f *framework.Test, name, rule, latched string) {
	f.T.Helper()
	err := f.Poll("spec.version refused", time.Minute, func(ctx context.Context) (bool, string, error) {
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if c == nil {
			return false, "no Progressing condition", nil
		}
		return c.Status == metav1.ConditionFalse && c.Reason == "VersionChangeRejected" && strings.Contains(c.Message, rule),
			fmt.Sprintf("Progressing=%s/%s %q", c.Status, c.Reason, c.Message), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	ec, err := getCluster(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	if ec.Status.Observed == nil || ec.Status.Observed.Version != latched {
		f.T.Fatalf("the refused version was latched: observed %+v", ec.Status.Observed)
	}
	f.T.Logf("refused as expected: %s", meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionProgressing).Message)
}

// requireRunningTemplate checks every member Pod of the cluster with check.
func requireRunningTemplate(f *framework.Test, name string, check func(*corev1.Pod) error) {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	for i := range pods.Items {
		if err := check(&pods.Items[i]); err != nil {
			f.T.Errorf("Pod %s: %v", pods.Items[i].Name, err)
		}
	}
}

// fillLog writes n small keys (8 writers in parallel) under a prefix of its own, so that every
// member's raft log advances by n entries.
func fillLog(f *framework.Test, name string, n int) {
	f.T.Helper()
	c, _ := f.DialMembers(voterSelector(name), nil)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				// The roll this fill unlocks may start while it still writes: a put that
				// meets a member stopping is tried again (these keys are outside the checked
				// history, so a duplicate does no harm).
				var err error
				for range 5 {
					ctx, cancel := context.WithTimeout(f.Ctx, 10*time.Second)
					_, err = c.Put(ctx, fmt.Sprintf("fill/%06d", i), "x")
					cancel()
					if err == nil || f.Ctx.Err() != nil {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		f.T.Fatalf("filling the raft log: %v", err)
	}
	f.T.Logf("wrote %d keys in %s so that every member snapshots under 3.6", n, since(start))
}

// TestRollingUpdateMemorySurge changes the CPU request of a 3-member Memory cluster under write
// traffic: a Memory member cannot restart without losing its data, so each is replaced by a
// new member with the new template, added before the old one is removed. Checks: none of the
// original members left, never more than one learner, the same cluster ID, HashKV equal, a
// linearizable history with no acknowledged write lost. Records roll-memory-total and
// write-gap-max.
func TestRollingUpdateMemorySurge(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	const name = "rollmem"
	ec := newCluster(f, name, 3)
	ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)

	start := time.Now()
	patchSpec(f, name, func(s *etcdv1alpha2.EtcdClusterSpec) {
		s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m")}
	})
	waitReplacedAll(f, name, before)
	ec = waitConverged(f, name, 3, rollTimeout)
	f.Record("roll-memory-total", since(start), "resources change on 3 Memory members: spec patched → converged, each member replaced by a surge (add, then remove)")
	if ec.Status.UpdatedMembers != 3 {
		t.Errorf("updatedMembers %d, want 3", ec.Status.UpdatedMembers)
	}
	obs.check(f, clusterID)
	after := requireHealed(f, name, 3, clusterID)
	for m, id := range before {
		requireLeftMemory(f, m, id, after)
	}
	load.verify(f, "resources change rolled across 3 Memory members by surge")
}

// requireLeftMemory asserts that a surged-out Memory member is gone from etcd by name and ID.
func requireLeftMemory(f *framework.Test, member, oldID string, after map[string]string) {
	f.T.Helper()
	for n, id := range after {
		if n == member || id == oldID {
			f.T.Errorf("replaced member %s (%s) is still in etcd as %s (%s)", member, oldID, n, id)
		}
	}
}
