package etcdcluster_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
)

// rollSteps are the failpoints a rolling update reaches: the adoption of the changed spec, the
// authorisation of each member's template and the leadership hand-over before the last member.
var rollSteps = []string{failpoint.SpecAdopted, failpoint.TemplateAuthorised, failpoint.LeaderMoved}

// TestCrashDuringRoll kills the reconciler right after each step of a rolling update of 3
// members, restarts it cold, and checks that the roll completes (converged, with the
// crash-consistency invariants of consistent) with every member restarted exactly once, no
// member added, promoted or removed, and never more than one learner. One variant keeps template-authorised armed across restarts, as the operator's
// environment variable does: each member's authorisation crashes the operator once, and the roll
// must still progress (a pass after the crash finds the member authorised and waits for it).
func TestCrashDuringRoll(t *testing.T) {
	t.Parallel()
	type variant struct {
		step  string
		every bool
	}
	var vs []variant
	for _, s := range rollSteps {
		vs = append(vs, variant{step: s})
	}
	vs = append(vs, variant{step: failpoint.TemplateAuthorised, every: true})
	for _, v := range vs {
		name := v.step
		if v.every {
			name += "/every-time"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			const cluster = "rollcrash"
			w.newCluster(cluster, 3)
			d := newCrashDriver(t, w, cluster)
			d.until("bootstrap of 3", w.converged(cluster, 3))
			done := len(w.fake(cluster).Mutations())
			if v.every {
				d.armEvery(v.step, 3)
			} else {
				d.arm(v.step)
			}

			w.setCPURequest(cluster, "150m")
			pods := map[string]map[types.UID]bool{}
			rolled := w.rolledFake(cluster, 3, "150m")
			d.until("rolled", func() error {
				if err := w.recordPods(cluster, pods); err != nil {
					return err
				}
				return rolled()
			})
			d.disarm()
			if !d.reached[v.step] {
				t.Errorf("failpoint %s was never reached", v.step)
			}
			for m, uids := range pods {
				if len(uids) != 2 {
					t.Errorf("member %s ran %d Pods during the roll, want 2 (one restart)", m, len(uids))
				}
			}
			for _, c := range w.fake(cluster).Mutations()[done:] {
				if c.Method == etcdfake.MemberAddAsLearner || c.Method == etcdfake.MemberRemove || c.Method == etcdfake.MemberPromote {
					t.Errorf("the roll changed etcd's membership: %s", c)
				}
			}
		})
	}
}

// recordPods adds the UID of every member Pod of cluster to pods, by member name.
func (w *world) recordPods(cluster string, pods map[string]map[types.UID]bool) error {
	uids, err := w.podUIDs(context.Background(), cluster)
	if err != nil {
		return err
	}
	for n, uid := range uids {
		if pods[n] == nil {
			pods[n] = map[types.UID]bool{}
		}
		pods[n][uid] = true
	}
	return nil
}

// rolledFake is rolled for the fake kubelet's Pods, which carry the hash but no container
// resources: converged, every member on the new template with a hash authorised, and its Pod
// carrying that hash.
func (w *world) rolledFake(cluster string, n int, cpu string) func() error {
	conv := w.converged(cluster, n)
	return func() error {
		if err := conv(); err != nil {
			return err
		}
		ctx := context.Background()
		ms, err := w.members(ctx, cluster)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if q := m.Spec.Resources.Requests[corev1.ResourceCPU]; q.String() != cpu {
				return fmt.Errorf("member %s requests cpu %s: %w", m.Name, q.String(), errNotYet)
			}
			pod := &corev1.Pod{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: m.Name}, pod); err != nil {
				return err
			}
			want := m.Annotations[etcdv1alpha2.AnnotationTemplateHash]
			if got := pod.Annotations[etcdv1alpha2.AnnotationTemplateHash]; want == "" || got != want {
				return fmt.Errorf("member %s authorises %q, its Pod runs %q: %w", m.Name, want, got, errNotYet)
			}
		}
		return nil
	}
}

// surgeSteps are the failpoints a Memory surge reaches: the new member's creation, add, patch
// and promotion, the leadership hand-over, and the old member's removal.
var surgeSteps = []string{
	failpoint.SpecAdopted, failpoint.MemberCreated, failpoint.LearnerAdded, failpoint.LearnerInitialClusterPatched,
	failpoint.LearnerPromoted, failpoint.LeaderMoved, failpoint.RemovalReasonSet, failpoint.MemberRemoved, failpoint.MemberDeleted,
}

// TestCrashDuringMemorySurge kills the reconciler right after each step of the surge that rolls
// a 1-member Memory cluster (1 → 2 → 1: add a member with the new template, move leadership to
// it, remove the old one; every step of a larger surge, once), restarts it cold, and checks that
// the roll completes: converged at 1 with a new member, never more than one learner, no peer
// URL added twice. The 3-member surge runs over real etcd in TestRollingUpdateMemorySurge.
func TestCrashDuringMemorySurge(t *testing.T) {
	t.Parallel()
	for _, step := range surgeSteps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			const cluster = "surgecrash"
			w.newMemoryCluster(cluster, 1)
			d := newCrashDriver(t, w, cluster)
			d.until("bootstrap of 1", w.converged(cluster, 1))
			original := memberNames(t, w, cluster)
			d.arm(step)

			w.setCPURequest(cluster, "150m")
			rolled := w.rolledFake(cluster, 1, "150m")
			d.until("rolled by surge", func() error {
				if err := rolled(); err != nil {
					return err
				}
				for n := range memberNames(t, w, cluster) {
					if original[n] {
						return fmt.Errorf("original member %s is still there: %w", n, errNotYet)
					}
				}
				return nil
			})
			d.disarm()
			if !d.reached[step] {
				t.Errorf("failpoint %s was never reached", step)
			}
			checkNoDuplicateAdds(t, w.fake(cluster).Mutations())
		})
	}
}
