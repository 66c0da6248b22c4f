package etcdcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// testPendingGrace stands in for the 5-minute default, so that the test sees the grace end.
const testPendingGrace = 2 * time.Second

// TestUnschedulableMemberIsReported runs both controllers on a 1-member cluster whose nodeSelector
// no node satisfies (the fake kubelet plays the scheduler and writes PodScheduled=False through
// the status subresource): the member's Ready condition quotes the scheduler at once; after the
// pending grace the member is Healthy=False/Unschedulable and the cluster Degraded=True/
// MemberUnschedulable naming the member and the cause, announced by one Warning per object however
// many passes follow. Labelling the node lets the Pod schedule, and everything recovers.
func TestUnschedulableMemberIsReported(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.kubeletOnly = true
	w.memberOpts = []etcdmember.Option{etcdmember.WithPendingGrace(testPendingGrace)}
	w.startController()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "u"},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: "3.6.5", NodeSelector: map[string]string{"disktype": "nvme"},
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}},
	}
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}

	var seed etcdv1alpha2.EtcdMember
	wait.Eventually(t, convergeTimeout, "the seed's Ready condition quotes the scheduler", func() error {
		ms, err := w.members(t.Context(), "u")
		if err != nil || len(ms) != 1 {
			return fmt.Errorf("%d members: %w", len(ms), errors.Join(err, errNotYet))
		}
		seed = ms[0]
		r := meta.FindStatusCondition(seed.Status.Conditions, etcdv1alpha2.ConditionReady)
		if r == nil || r.Status != metav1.ConditionFalse || !strings.Contains(r.Message, "unschedulable: "+fakeSchedulerMessage) {
			return fmt.Errorf("Ready = %+v", r)
		}
		return nil
	})
	wait.Eventually(t, convergeTimeout, "after the pending grace: Unschedulable member, MemberUnschedulable cluster", func() error {
		if err := w.memberHealthy(&seed, metav1.ConditionFalse, "Unschedulable", fakeSchedulerMessage); err != nil {
			return err
		}
		return w.condition("u", etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, membership.ReasonMemberUnschedulable,
			"member "+seed.Name+": ", fakeSchedulerMessage)()
	})

	// More passes over an unchanged problem must announce nothing new.
	w.poke(&seed, 3)
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(pollInterval) {
		for _, name := range []string{"u", seed.Name} {
			if n := w.eventCount(name, etcdmember.EventMemberFailed); n != 1 {
				t.Fatalf("%s: %d MemberFailed Events, want 1 for one transition", name, n)
			}
		}
	}

	w.labelNode("disktype", "nvme")
	wait.Eventually(t, convergeTimeout, "scheduled: converged", w.converged("u", 1))
	wait.Eventually(t, convergeTimeout, "Healthy again, not Degraded", func() error {
		if err := w.memberHealthy(&seed, metav1.ConditionTrue, "Healthy"); err != nil {
			return err
		}
		return w.condition("u", etcdv1alpha2.ConditionDegraded, metav1.ConditionFalse, membership.ReasonQuorumHealthy)()
	})
}

// memberHealthy checks the Healthy condition of member m.
func (w *world) memberHealthy(m *etcdv1alpha2.EtcdMember, status metav1.ConditionStatus, reason string, msgParts ...string) error {
	got := &etcdv1alpha2.EtcdMember{}
	if err := k8s.Get(w.t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		return err
	}
	h := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha2.ConditionHealthy)
	if h == nil || h.Status != status || h.Reason != reason {
		return fmt.Errorf("member Healthy = %+v, want %s/%s", h, status, reason)
	}
	for _, p := range msgParts {
		if !strings.Contains(h.Message, p) {
			return fmt.Errorf("member Healthy message %q does not contain %q", h.Message, p)
		}
	}
	return nil
}

// poke changes an annotation of member m n times: each change wakes both controllers for a pass
// over an otherwise unchanged world.
func (w *world) poke(m *etcdv1alpha2.EtcdMember, n int) {
	w.t.Helper()
	for i := range n {
		got := &etcdv1alpha2.EtcdMember{}
		if err := k8s.Get(w.t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
			w.t.Fatal(err)
		}
		before := got.DeepCopy()
		got.Annotations = map[string]string{"test/poke": fmt.Sprint(i)}
		if err := k8s.Patch(w.t.Context(), got, client.MergeFrom(before)); err != nil {
			w.t.Fatal(err)
		}
	}
}

// eventCount counts the occurrences of Events of reason regarding the object named name; an Event
// the recorder folded into a series counts once per occurrence.
func (w *world) eventCount(name, reason string) int {
	w.t.Helper()
	var evs eventsv1.EventList
	if err := k8s.List(context.Background(), &evs, client.InNamespace(w.ns)); err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Regarding.Name != name || e.Reason != reason {
			continue
		}
		n++
		if e.Series != nil && e.Series.Count > 1 {
			n += int(e.Series.Count) - 1
		}
	}
	return n
}

// TestMissingImageIsNamed: a version whose image cannot be pulled leaves the seed's Pod Pending.
// The member's Ready condition and the cluster's Progressing condition must say why, with the
// image named (before, both said only "pod phase: Pending").
func TestMissingImageIsNamed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.kubeletOnly = true
	w.startController()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "img"},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.99",
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}},
	}
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	want := []string{"container etcd waits: ImagePullBackOff (image ", missingImageTag + ")", "Back-off pulling image"}
	wait.Eventually(t, convergeTimeout, "Progressing names the image that cannot be pulled",
		w.condition("img", etcdv1alpha2.ConditionProgressing, metav1.ConditionTrue, membership.ReasonWaitingForSeed, want...))
	ms, err := w.members(t.Context(), "img")
	if err != nil || len(ms) == 0 {
		t.Fatalf("members: %v, %v", ms, err)
	}
	for _, m := range ms {
		if !m.Spec.Bootstrap {
			continue
		}
		r := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionReady)
		for _, part := range want {
			if r == nil || !strings.Contains(r.Message, part) {
				t.Errorf("seed %s Ready = %+v, want its message to contain %q", m.Name, r, part)
			}
		}
	}
}
