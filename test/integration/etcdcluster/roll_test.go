package etcdcluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// rollTimeout bounds a roll of real members: per member a restart, RollSettle and a catch-up.
const rollTimeout = 3 * realConvergeTimeout

// setCPURequest patches spec.resources.requests.cpu: a restart-relevant change.
func (w *world) setCPURequest(name, cpu string) {
	w.t.Helper()
	c := w.cluster(name)
	before := c.DeepCopy()
	c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if err := k8s.Patch(w.t.Context(), c, client.MergeFrom(before)); err != nil {
		w.t.Fatalf("setting the CPU request of %s to %s: %v", name, cpu, err)
	}
}

// podUIDs returns the UID of each member's Pod, by member name.
func (w *world) podUIDs(ctx context.Context, cluster string) (map[string]types.UID, error) {
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{etcdv1alpha2.LabelCluster: cluster}); err != nil {
		return nil, err
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out, nil
}

// rollObserver polls a rolling cluster for the order in which member Pods were replaced and the
// most members ever not Ready at once, and watches it for every Progressing message it says.
type rollObserver struct {
	w       *world
	name    string
	mu      sync.Mutex
	initial map[string]types.UID
	order   []string
	maxDown int
	seen    []string
	stop    chan struct{}
	done    chan struct{}
	unwatch func()
}

func (w *world) observeRoll(t *testing.T, name string) *rollObserver {
	t.Helper()
	initial, err := w.podUIDs(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	o := &rollObserver{w: w, name: name, initial: initial, stop: make(chan struct{}), done: make(chan struct{})}
	o.unwatch = w.watchCluster(t, name, o.progressing)
	go func() {
		defer close(o.done)
		for {
			select {
			case <-o.stop:
				return
			case <-time.After(pollInterval):
			}
			o.observe()
		}
	}()
	t.Cleanup(o.finish)
	return o
}

func (o *rollObserver) observe() {
	ctx := context.Background()
	uids, err := o.w.podUIDs(ctx, o.name)
	if err != nil {
		return
	}
	ms, err := o.w.members(ctx, o.name)
	if err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for n, uid := range uids {
		if was, ok := o.initial[n]; ok && was != uid && !slices.Contains(o.order, n) {
			o.order = append(o.order, n)
		}
	}
	down := 0
	for _, m := range ms {
		if !meta.IsStatusConditionTrue(m.Status.Conditions, etcdv1alpha2.ConditionReady) {
			down++
		}
	}
	o.maxDown = max(o.maxDown, down)
}

// progressing records c's Progressing message while it is RollingUpdate.
func (o *rollObserver) progressing(c *etcdv1alpha2.EtcdCluster) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing); p != nil && p.Reason == membership.ReasonRollingUpdate {
		if !slices.Contains(o.seen, p.Message) {
			o.seen = append(o.seen, p.Message)
		}
	}
}

func (o *rollObserver) finish() {
	select {
	case <-o.stop:
	default:
		close(o.stop)
		o.unwatch()
	}
	<-o.done
}

// rolled checks that every member of the cluster carries the latched template's hash, its Pod
// runs it, and the cluster converged with n updated members.
func (w *world) rolled(name string, n int, cpu string) func() error {
	conv := w.converged(name, n)
	return func() error {
		if err := conv(); err != nil {
			return err
		}
		ms, err := w.members(context.Background(), name)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if q := m.Spec.Resources.Requests[corev1.ResourceCPU]; q.String() != cpu {
				return fmt.Errorf("member %s requests cpu %s, want %s: %w", m.Name, q.String(), cpu, errNotYet)
			}
			pod := &corev1.Pod{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: m.Name}, pod); err != nil {
				return err
			}
			want := m.Annotations[etcdv1alpha2.AnnotationTemplateHash]
			if got := pod.Annotations[etcdv1alpha2.AnnotationTemplateHash]; want == "" || got != want {
				return fmt.Errorf("member %s authorises template %q, its Pod runs %q: %w", m.Name, want, got, errNotYet)
			}
			if q := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != cpu {
				return fmt.Errorf("the Pod of %s requests cpu %s: %w", m.Name, q.String(), errNotYet)
			}
		}
		return nil
	}
}

// eventNotes returns the notes of the Events with reason on the cluster's objects, in order.
func (w *world) eventNotes(ctx context.Context, reason string) ([]string, error) {
	var list eventsv1.EventList
	if err := k8s.List(ctx, &list, client.InNamespace(w.ns)); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Kind == "EtcdCluster" {
			out = append(out, e.Note)
		}
	}
	return out, nil
}

// TestRollingUpdateThreePVCMembers changes the CPU request of a cluster of 3 real etcd members:
// each member's Pod is replaced on its PVC, one at a time, the leader last after leadership
// moved away; member IDs, data and the cluster stay; no membership change; Progressing says
// how far the roll is, and the Events tell the story once.
func TestRollingUpdateThreePVCMembers(t *testing.T) {
	t.Parallel()
	f := newReadoptFixture(t, "roll")
	w := f.w
	before := f.ids
	leader := leaderName(t, w, f.name)
	o := w.observeRoll(t, f.name)

	w.setCPURequest(f.name, "150m")
	wait.Eventually(t, rollTimeout, "rolled to the new template", w.rolled(f.name, 3, "150m"))
	o.finish()

	if got := memberIDs(t, w, f.name); !mapsEqual(got, before) {
		t.Errorf("member IDs %v, were %v: a member was replaced instead of restarted", got, before)
	}
	if calls := w.real.mutations()[f.done:]; len(calls) > 0 {
		t.Errorf("the roll changed etcd's membership: %v", calls)
	}
	if len(o.order) != 3 {
		t.Fatalf("Pods replaced: %v, want all 3", o.order)
	}
	if o.order[2] != leader {
		t.Errorf("restart order %v: the leader %s was not last", o.order, leader)
	}
	if o.maxDown > 1 {
		t.Errorf("%d members were not Ready at once", o.maxDown)
	}
	for _, want := range []string{"0/3 members updated; restarting", "1/3 members updated", "2/3 members updated"} {
		if !slices.ContainsFunc(o.seen, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("Progressing=RollingUpdate never said %q; saw %q", want, o.seen)
		}
	}
	ctx := t.Context()
	for _, m := range slices.Sorted(maps.Keys(before)) {
		if !w.real.startedOnData(m) {
			t.Errorf("member %s restarted on an empty data directory", m)
		}
		cli := w.real.clientOf(t, w.real.clientURL(f.name, m))
		resp, err := cli.Get(ctx, readoptKey, clientv3.WithSerializable())
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != readoptValue {
			t.Errorf("member %s lost the key written before the roll: %v %v", m, resp, err)
		}
	}
	wait.Eventually(t, convergeTimeout, "the roll's Events", func() error {
		counts := map[string]int{}
		for _, r := range []string{"RollingUpdateStarted", "MemberUpdated", "LeaderMoved", "RollingUpdateCompleted", "RollingUpdateDisruptive"} {
			notes, err := w.eventNotes(ctx, r)
			if err != nil {
				return err
			}
			counts[r] = len(notes)
		}
		want := map[string]int{"RollingUpdateStarted": 1, "MemberUpdated": 3, "LeaderMoved": 1, "RollingUpdateCompleted": 1, "RollingUpdateDisruptive": 0}
		if !mapsEqual(counts, want) {
			return fmt.Errorf("Events %v, want %v: %w", counts, want, errNotYet)
		}
		return nil
	})
}

// TestRollingUpdateOneMember restarts the only member of a 1-member PVC cluster in place: the
// same member ID and data come back, with one RollingUpdateDisruptive Warning.
func TestRollingUpdateOneMember(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	w.startController()
	w.newCluster("one", 1)
	wait.Eventually(t, realConvergeTimeout, "bootstrap of 1 real member", w.converged("one", 1))
	ids := memberIDs(t, w, "one")
	cli := w.real.client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, readoptKey, readoptValue); err != nil {
		t.Fatalf("writing a key: %v", err)
	}

	w.setCPURequest("one", "150m")
	wait.Eventually(t, rollTimeout, "rolled to the new template", w.rolled("one", 1, "150m"))
	if got := memberIDs(t, w, "one"); !mapsEqual(got, ids) {
		t.Errorf("member IDs %v, were %v", got, ids)
	}
	for n := range ids {
		if !w.real.startedOnData(n) {
			t.Errorf("member %s restarted on an empty data directory", n)
		}
	}
	resp, err := w.real.client(t).Get(t.Context(), readoptKey)
	if err != nil || len(resp.Kvs) != 1 {
		t.Errorf("the key written before the restart: %v %v", resp, err)
	}
	wait.Eventually(t, convergeTimeout, "one RollingUpdateDisruptive Warning", w.eventsOnce("one", "RollingUpdateDisruptive"))
}

// leaderName returns the EtcdMember name of etcd's leader.
func leaderName(t *testing.T, w *world, cluster string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cli := w.real.client(t)
	for _, m := range w.real.snapshot() {
		resp, err := cli.Status(ctx, w.real.clientURL(cluster, m.Name))
		if err == nil && resp.Leader == resp.Header.MemberId {
			return m.Name
		}
	}
	t.Fatal("no member leads")
	return ""
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// TestRollHaltsOnStartFailedAndResumes rolls a CPU request whose Pods never turn Ready (the
// fake kubelet starts no etcd for them): the first restarted member is StartFailed after
// memberStartGrace and the roll halts there (Degraded=True/MemberStartFailed, Progressing says
// so, no other member touched). A corrected spec, adopted at once by moving the deadline into
// the past, re-rolls that member first and completes.
func TestRollHaltsOnStartFailedAndResumes(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	w.memberOpts = []etcdmember.Option{etcdmember.WithGraces(health.Graces{MemberStart: 3 * time.Second})}
	w.real.mu.Lock()
	w.real.failIf = func(p *corev1.Pod) bool {
		q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		return q.String() == "666m"
	}
	w.real.mu.Unlock()
	w.startController()
	w.newCluster("halt", 3)
	wait.Eventually(t, realConvergeTimeout, "bootstrap of 3 real members", w.converged("halt", 3))
	uids, err := w.podUIDs(t.Context(), "halt")
	if err != nil {
		t.Fatal(err)
	}

	w.setCPURequest("halt", "666m")
	wait.Eventually(t, rollTimeout, "the roll halted", w.rollHalted("halt"))
	replaced := w.replacedPods(t, "halt", uids)
	if len(replaced) != 1 {
		t.Fatalf("Pods replaced while halted: %v, want exactly one", replaced)
	}
	if c := w.cluster("halt"); c.Status.ReadyMembers != 2 {
		t.Errorf("readyMembers %d while halted, want 2", c.Status.ReadyMembers)
	}

	w.setCPURequest("halt", "150m")
	c := w.cluster("halt")
	before := c.DeepCopy()
	c.Status.ProgressDeadline = &metav1.Time{Time: time.Now().Add(-time.Hour)}
	if err := k8s.Status().Patch(t.Context(), c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	o := w.observeRoll(t, "halt")
	wait.Eventually(t, rollTimeout, "rolled to the corrected template", w.rolled("halt", 3, "150m"))
	o.finish()
	if len(o.order) != 3 || o.order[0] != replaced[0] {
		t.Errorf("restart order after the fix %v: the member that failed to start (%s) goes first", o.order, replaced[0])
	}
}

// rollHalted checks that cluster name's roll halted on a member that failed to start:
// Degraded=True/MemberStartFailed and Progressing=RollingUpdate say so.
func (w *world) rollHalted(name string) func() error {
	return func() error {
		c := w.cluster(name)
		d := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionDegraded)
		p := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if d == nil || d.Reason != membership.ReasonMemberStartFailed || !strings.Contains(d.Message, "the rolling update is halted") {
			return fmt.Errorf("Degraded = %+v: %w", d, errNotYet)
		}
		if p == nil || p.Reason != membership.ReasonRollingUpdate || !strings.Contains(p.Message, "members updated; roll halted: ") {
			return fmt.Errorf("Progressing = %+v: %w", p, errNotYet)
		}
		return nil
	}
}

// replacedPods returns the members of cluster whose Pod is no longer the one in uids.
func (w *world) replacedPods(t *testing.T, cluster string, uids map[string]types.UID) []string {
	t.Helper()
	now, err := w.podUIDs(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	var replaced []string
	for n, uid := range now {
		if uids[n] != uid {
			replaced = append(replaced, n)
		}
	}
	return replaced
}

// TestInPlaceFieldsDoNotRoll changes additionalMetadata and imagePullSecrets of a converged
// cluster of 3 real members: both reach every member, the labels reach every Pod in place, and
// no Pod is restarted (neither is in the template hash).
func TestInPlaceFieldsDoNotRoll(t *testing.T) {
	t.Parallel()
	f := newReadoptFixture(t, "inplace")
	w := f.w
	before, err := w.podUIDs(t.Context(), f.name)
	if err != nil {
		t.Fatal(err)
	}
	c := w.cluster(f.name)
	orig := c.DeepCopy()
	c.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "storage"}}
	c.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mirror"}}
	if err := k8s.Patch(t.Context(), c, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "the in-place fields on every member and Pod", func() error {
		ms, err := w.members(t.Context(), f.name)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if len(m.Spec.ImagePullSecrets) != 1 || m.Spec.AdditionalMetadata == nil {
				return fmt.Errorf("member %s: pull secrets %v, metadata %v: %w", m.Name, m.Spec.ImagePullSecrets, m.Spec.AdditionalMetadata, errNotYet)
			}
			pod := &corev1.Pod{}
			if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: m.Name}, pod); err != nil {
				return err
			}
			if pod.Labels["team"] != "storage" {
				return fmt.Errorf("Pod %s labels %v: %w", pod.Name, pod.Labels, errNotYet)
			}
		}
		return w.converged(f.name, 3)()
	})
	after, err := w.podUIDs(t.Context(), f.name)
	if err != nil {
		t.Fatal(err)
	}
	if !mapsEqual(before, after) {
		t.Errorf("Pods %v, were %v: an in-place change restarted members", after, before)
	}
}
