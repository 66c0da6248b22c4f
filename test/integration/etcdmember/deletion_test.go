package etcdmember_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

func TestRetainLeavesPVCUnowned(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyRetain, "")
	m := newMember(t, c)
	var pvc *corev1.PersistentVolumeClaim
	wait.Eventually(t, convergeTimeout, "PVC created", func(ctx context.Context) (err error) {
		pvc, err = getPVC(ctx, m)
		return err
	})
	if len(pvc.OwnerReferences) != 0 {
		t.Errorf("a Retain PVC has owner references %+v", pvc.OwnerReferences)
	}
	m, _ = getMember(t.Context(), m)
	if pvc.Annotations[etcdv1alpha2.AnnotationMemberUID] != string(m.UID) {
		t.Errorf("PVC annotations %v lack member-uid %s", pvc.Annotations, m.UID)
	}
}

func TestFinalizerReleasedWhenParentDeleting(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	markPodRunning(t, waitPod(t, m), "10.0.1.1", true)
	setMemberStatus(t, m, "a1", true)
	etcd.setMembers(ns, c.Name, etcdclient.Member{ID: 0xa1, Name: m.Name})
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionTrue, etcdmember.ReasonPodReady)

	// Keep the cluster in "deleting" (envtest has no garbage collector to finish it).
	hold := "test.example/hold"
	cur := &etcdv1alpha2.EtcdCluster{}
	if err := k8sClient.Get(t.Context(), client.ObjectKeyFromObject(c), cur); err != nil {
		t.Fatal(err)
	}
	base := cur.DeepCopy()
	cur.Finalizers = append(cur.Finalizers, hold)
	if err := k8sClient.Patch(t.Context(), cur, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		base := cur.DeepCopy()
		cur.Finalizers = nil
		_ = k8sClient.Patch(context.Background(), cur, client.MergeFrom(base))
	})
	if err := k8sClient.Delete(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Delete(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	waitGone(t, m)
	if n := etcd.getsOf(ns, c.Name); n != 0 {
		t.Errorf("the controller asked for an etcd client %d times while the whole cluster was being deleted; want 0", n)
	}
}

func TestFinalizerReleasedWhenParentGone(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	waitPod(t, m)
	setMemberStatus(t, m, "a1", true)
	if err := k8sClient.Delete(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Delete(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	waitGone(t, m)
	if n := etcd.getsOf(ns, c.Name); n != 0 {
		t.Errorf("etcd asked %d times for a member of a deleted cluster; want 0", n)
	}
}

func TestForeignDeletionHeld(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	pod := waitPod(t, m)
	// Bound to a node, as the scheduler would: a graceful deletion of a bound Pod then waits for
	// a kubelet, which envtest does not run, so only a deletion without grace removes it.
	if err := k8sClient.SubResource("binding").Create(t.Context(), pod, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}); err != nil {
		t.Fatalf("binding Pod %s: %v", pod.Name, err)
	}
	markPodRunning(t, waitPod(t, m), "10.0.2.1", true)
	setMemberStatus(t, m, "a1", true)
	etcd.setMembers(ns, c.Name, etcdclient.Member{ID: 0xa1, Name: m.Name})
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionTrue, etcdmember.ReasonPodReady)

	if err := k8sClient.Delete(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionTrue, etcdmember.ReasonPodReady, etcdmember.MsgDeletionBlocked) // it keeps serving
	if cfg, ok := etcd.configOf(ns, c.Name); !ok || len(cfg.Endpoints) != 1 || cfg.Endpoints[0] != "http://10.0.2.1:2379" {
		t.Errorf("etcd dialled with %+v, want the Pod IP endpoint", cfg)
	}
	wait.Consistently(t, steadyWindow, "a foreign deletion stays held", func(ctx context.Context) error {
		cur, err := getMember(ctx, m)
		if err != nil {
			return err
		}
		if !slices.Contains(cur.Finalizers, etcdv1alpha2.FinalizerMemberCleanup) {
			return errors.New("finalizer released")
		}
		return nil
	})

	// One Warning Event for the blocked deletion, however many passes saw it.
	wait.Eventually(t, convergeTimeout, "a MemberDeletionBlocked Event", func(ctx context.Context) error {
		n, err := countEvents(ctx, ns, m.Name, corev1.EventTypeWarning, etcdmember.EventMemberDeletionBlocked)
		if err == nil && n != 1 {
			err = fmt.Errorf("%d Events", n)
		}
		return err
	})

	// A person allows it; the cluster controller's MemberRemove (simulated) takes it out of
	// etcd; the finalizer goes.
	patchMember(t, m, func(m *etcdv1alpha2.EtcdMember) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[etcdv1alpha2.AnnotationAllowDeletion] = "true"
	})
	wait.Eventually(t, convergeTimeout, "held while waiting for MemberRemove", func(ctx context.Context) error {
		cur, err := getMember(ctx, m)
		if err != nil {
			return err
		}
		for _, cd := range cur.Status.Conditions {
			if cd.Type == etcdv1alpha2.ConditionReady && cd.Reason == etcdmember.ReasonRemoving && cd.Message != etcdmember.MsgDeletionBlocked {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", cur.Status.Conditions)
	})
	etcd.setMembers(ns, c.Name, etcdclient.Member{ID: 0xb2, Name: "someone-else"})
	waitGone(t, m)
	// The member left etcd: its Pod is deleted with it, by the member controller itself rather
	// than one garbage-collector hop later (envtest runs no garbage collector, so only the
	// controller can have done it), and without a grace period, so that no terminating Pod is
	// left in the cluster's view (before, it stayed terminating until its kubelet confirmed).
	wait.Eventually(t, convergeTimeout, "the removed member's Pod gone", func(ctx context.Context) error {
		pod := &corev1.Pod{}
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: m.Name}, pod)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case !pod.DeletionTimestamp.IsZero():
			return fmt.Errorf("the Pod is terminating with a grace period of %ds", ptr.Deref(pod.DeletionGracePeriodSeconds, -1))
		}
		return errors.New("the Pod is still there")
	})
}

// TestRecordedRemovalReleasesWithoutEtcd: a member the EtcdCluster controller removed from etcd
// in this process (its MemberRemove returned, recorded on the board) loses its finalizer and its
// Pod without another MemberList. Here etcd still lists it, as a member list that cannot be read
// fresh would: before, the finalizer was held until a MemberList said otherwise, so a pause that
// made the last member dormant right after a removal held the removed member, and its
// crash-looping Pod, forever (e2e TestLifecycleTimings), and every scale-down step waited for a
// dial.
func TestRecordedRemovalReleasesWithoutEtcd(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1e")
	m := newMember(t, c)
	markPodRunning(t, waitPod(t, m), "10.0.3.1", true)
	setMemberStatus(t, m, "c3", true)
	etcd.setMembers(ns, c.Name, etcdclient.Member{ID: 0xc3, Name: m.Name})
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionTrue, etcdmember.ReasonPodReady)
	patchMember(t, m, func(m *etcdv1alpha2.EtcdMember) {
		m.Annotations = map[string]string{etcdv1alpha2.AnnotationRemovalReason: "ScaleDown"}
	})
	dials := etcd.getsOf(ns, c.Name)

	views.RecordRemoved(client.ObjectKeyFromObject(c), 0xc3)
	if err := k8sClient.Delete(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	waitGone(t, m)
	wait.Eventually(t, convergeTimeout, "the removed member's Pod gone", func(ctx context.Context) error {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: m.Name}, &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the Pod is still there (%w)", err)
	})
	if n := etcd.getsOf(ns, c.Name); n != dials {
		t.Errorf("%d etcd clients asked for after the deletion, want none", n-dials)
	}
}

func TestForeignPodNeverTouched(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	name := "etcd-squat"
	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "other"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.test/other:1"}}},
	}
	if err := k8sClient.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	m := newMember(t, c, func(m *etcdv1alpha2.EtcdMember) { m.GenerateName, m.Name = "", name })
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPodNotReady, "neither adopts nor deletes")
	patchMember(t, m, func(m *etcdv1alpha2.EtcdMember) { m.Spec.Dormant = true }) // would delete an own Pod
	wait.Consistently(t, steadyWindow, "the foreign Pod is left alone", func(ctx context.Context) error {
		p := &corev1.Pod{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(foreign), p); err != nil {
			return err
		}
		if p.UID != foreign.UID || p.ResourceVersion != foreign.ResourceVersion || !p.DeletionTimestamp.IsZero() {
			return fmt.Errorf("the foreign Pod changed: rv %s → %s, deletion %v", foreign.ResourceVersion, p.ResourceVersion, p.DeletionTimestamp)
		}
		return nil
	})
}
