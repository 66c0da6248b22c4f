package etcdmember_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// runningVoter creates a PVC member whose Pod runs and is Ready, and which etcd lists as a
// voter: a member that was Ready with its current template.
func runningVoter(t *testing.T, ip string) (*etcdv1alpha2.EtcdCluster, *etcdv1alpha2.EtcdMember) {
	t.Helper()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	pod := waitPod(t, m)
	markPodRunning(t, pod, ip, true)
	// A member's Ready condition turning False is compared with its Pod's start time, both at
	// the API's second precision, to tell a crash from a start failure; a real etcd takes
	// longer than that to become Ready.
	wait.Eventually(t, convergeTimeout, "etcd took a second to start", func(context.Context) error {
		if time.Since(pod.CreationTimestamp.Time) < time.Second {
			return errors.New("not yet")
		}
		return nil
	})
	setMemberStatus(t, m, "a1", true)
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionTrue, etcdmember.ReasonPodReady)
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionTrue, health.ReasonHealthy, "etcd is running")
	return c, m
}

// wantMemberFailed checks, for a while, that exactly want MemberFailed Warnings regard the
// member and as many its cluster: one per transition, however many passes follow.
func wantMemberFailed(t *testing.T, c *etcdv1alpha2.EtcdCluster, m *etcdv1alpha2.EtcdMember, want int) {
	t.Helper()
	check := func(ctx context.Context) error {
		for _, name := range []string{m.Name, c.Name} {
			n, err := countEvents(ctx, m.Namespace, name, corev1.EventTypeWarning, etcdmember.EventMemberFailed)
			if err != nil {
				return err
			}
			if n != want {
				return fmt.Errorf("%d MemberFailed Events regarding %s, want %d", n, name, want)
			}
		}
		return nil
	}
	wait.Eventually(t, convergeTimeout, "MemberFailed Events recorded", check)
	wait.Consistently(t, steadyWindow, "no further MemberFailed Event", check)
}

// TestFatalExitClassified: one exit whose termination message (captured from etcd 3.6 with a
// corrupt bbolt file) matches a data-corruption pattern is only noted; the second in a row, as
// the kubelet reports it while the container is terminated, makes the member
// Healthy=False/DataCorrupt, which holds while the container waits in CrashLoopBackOff; one
// MemberFailed Warning on the member and one on the cluster.
func TestFatalExitClassified(t *testing.T) {
	t.Parallel()
	c, m := runningVoter(t, "10.0.5.1")
	corrupt := containerExit{reason: "Error", exitCode: 2, message: fixtureMessage(t, "3.6", "db-corrupt")}

	// The crash-loop timer starts here; the second exit comes well before it ends.
	crashContainer(t, m, 0, false, corrupt, nil)
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionTrue, health.ReasonHealthy, "matched pattern bbolt-invalid")

	crashContainer(t, m, 1, false, corrupt, &corrupt)
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, health.ReasonDataCorrupt, "(pattern bbolt-invalid)")
	crashContainer(t, m, 1, true, corrupt, nil)
	wait.Consistently(t, steadyWindow, "the classification holds in CrashLoopBackOff", func(ctx context.Context) error {
		return healthyIs(ctx, m, metav1.ConditionFalse, health.ReasonDataCorrupt)
	})
	wantMemberFailed(t, c, m, 1)
}

// TestOOMKilledStaysHealthy: a member killed for memory is not failed (a replacement would be
// killed too); Healthy stays True and says what to change; no MemberFailed.
func TestOOMKilledStaysHealthy(t *testing.T) {
	t.Parallel()
	c, m := runningVoter(t, "10.0.5.2")
	crashContainer(t, m, 3, true, containerExit{reason: "OOMKilled", exitCode: 137}, nil)
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionTrue, health.ReasonHealthy, "OOMKilled", "spec.resources.limits.memory")
	// Past memberFailureGrace: still not a crash loop.
	wait.Consistently(t, steadyWindow+testGraces.MemberFailure, "OOMKilled stays True", func(ctx context.Context) error {
		return healthyIs(ctx, m, metav1.ConditionTrue, health.ReasonHealthy)
	})
	wantMemberFailed(t, c, m, 0)
}

// TestCrashLoopClassified: a member that was Ready and has not been Ready again for
// memberFailureGrace is Healthy=False/CrashLoop. Nothing changes in the API when the grace
// ends: the pass that classifies is the one requeued for it.
func TestCrashLoopClassified(t *testing.T) {
	t.Parallel()
	c, m := runningVoter(t, "10.0.5.3")
	crashContainer(t, m, 2, true, containerExit{reason: "Error", exitCode: 2, message: "panic: something unexpected\n"}, nil)
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPodNotReady)
	h := waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, health.ReasonCrashLoop,
		"memberFailureGrace", "last exit: etcd exited with a panic")
	ready := waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPodNotReady)
	if d := h.LastTransitionTime.Sub(ready.LastTransitionTime.Time); d < testGraces.MemberFailure {
		t.Errorf("CrashLoop %v after the member stopped being Ready, before memberFailureGrace (%v)", d, testGraces.MemberFailure)
	}
	wantMemberFailed(t, c, m, 1)
}

// TestCrashLoopByRestarts: a member that was Ready and whose etcd restarts 3 more times after
// it was first seen not Ready is Healthy=False/CrashLoop at once, before memberFailureGrace:
// the restart count it was first seen failing with is kept in status.restartBaseline.
func TestCrashLoopByRestarts(t *testing.T) {
	t.Parallel()
	c, m := runningVoter(t, "10.0.5.6")
	panicked := containerExit{reason: "Error", exitCode: 2, message: "panic: something unexpected\n"}
	crashContainer(t, m, 1, true, panicked, nil)
	wait.Eventually(t, convergeTimeout, "the restart count is recorded when the failure is first seen", func(ctx context.Context) error {
		cur, err := getMember(ctx, m)
		if err != nil {
			return err
		}
		if b := cur.Status.RestartBaseline; b == nil || b.PodUID != cur.Status.PodUID || b.RestartCount != 1 {
			return fmt.Errorf("restartBaseline = %+v, want 1 for Pod %s", b, cur.Status.PodUID)
		}
		return nil
	})
	crashContainer(t, m, 2, true, panicked, nil)
	crashContainer(t, m, 4, true, panicked, nil)
	// The grace's message differs ("has not been Ready for memberFailureGrace"): this one can
	// only come from the restart count.
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, health.ReasonCrashLoop,
		"restarted 3 times or more within 10m0s", "last exit: etcd exited with a panic")
	wantMemberFailed(t, c, m, 1)
}

// TestStartFailedClassified: a Pod that runs but never becomes Ready with the member's
// template is Healthy=False/StartFailed after memberStartGrace, not a crash loop. The member was
// added to etcd (its member ID is recorded): before that, its guard holds etcd on purpose
// (AwaitingMembership), which is no failure.
func TestStartFailedClassified(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	markPodRunning(t, waitPod(t, m), "10.0.5.4", false)
	setMemberStatus(t, m, "a4", false)
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, health.ReasonStartFailed, "memberStartGrace")
	wantMemberFailed(t, c, m, 1)
}

// TestStagedMemberAwaitsMembership: a staged member (its Pod built before its add, no member ID
// recorded) whose Pod runs and is not Ready is waiting on purpose: Ready=False/AwaitingMembership,
// and past memberStartGrace it is still not StartFailed, so it is never replaced for waiting.
func TestStagedMemberAwaitsMembership(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	markPodRunning(t, waitPod(t, m), "10.0.5.9", false)
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonAwaitingMembership, "waits to be added to etcd")
	wait.Consistently(t, testGraces.MemberStart+2*time.Second, "a staged member is not StartFailed", func(ctx context.Context) error {
		cur, err := getMember(ctx, m)
		if err != nil {
			return err
		}
		if h := meta.FindStatusCondition(cur.Status.Conditions, etcdv1alpha2.ConditionHealthy); h != nil && h.Status == metav1.ConditionFalse {
			return fmt.Errorf("Healthy = %s/%s: %s", h.Status, h.Reason, h.Message)
		}
		return nil
	})
}

// TestMemoryMemberDataLostAnnouncedOnce: the classifier's DataLost for a Memory member whose
// Pod was deleted is announced once.
func TestMemoryMemberDataLostAnnouncedOnce(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c, func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
		m.Spec.Storage.Size = ptr.To(resource.MustParse("256Mi"))
	})
	pod := waitPod(t, m)
	wait.Eventually(t, convergeTimeout, "status records the Pod", func(ctx context.Context) error {
		cur, err := getMember(ctx, m)
		if err != nil {
			return err
		}
		if cur.Status.PodUID != string(pod.UID) {
			return fmt.Errorf("podUID %q", cur.Status.PodUID)
		}
		return nil
	})
	if err := k8sClient.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, etcdmember.ReasonDataLost, "the Pod was deleted")
	wantMemberFailed(t, c, m, 1)
}

// TestTerminatingOnLostNode: a Pod stuck terminating past its grace on an unreachable Node
// makes the member Healthy=False/NodeLost; the Pod is not force-deleted.
func TestTerminatingOnLostNode(t *testing.T) {
	t.Parallel()
	c, m := runningVoter(t, "10.0.5.5")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lost-" + m.Namespace},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}}}
	if err := k8sClient.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), node) })
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
		Reason: "NodeStatusUnknown", LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()}}
	if err := k8sClient.Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	pod, err := getPod(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	// Bound to the node, a Pod's deletion waits for its kubelet, which never answers.
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}
	if err := k8sClient.SubResource("binding").Create(t.Context(), pod, binding); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Delete(t.Context(), pod, client.GracePeriodSeconds(1)); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, health.ReasonNodeLost, "node "+node.Name, "not force-deleted")
	if p, err := getPod(t.Context(), m); err != nil || p.UID != pod.UID || p.DeletionTimestamp == nil {
		t.Errorf("the terminating Pod is gone or replaced (%v): the operator must never force-delete it", err)
	}
	wantMemberFailed(t, c, m, 1)
}

// TestPendingOnLostNode: a Pending Pod whose bound volume is pinned (by hostname label, as
// local volumes are) to a Node that has been NotReady for the node-lost grace makes the member
// Healthy=False/NodeLost. Nothing changes in the API when the grace ends: the pass that
// classifies is the one requeued for it.
func TestPendingOnLostNode(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	waitPod(t, m)
	// The Node is named apart from its hostname, as some clouds do.
	node := createNode(t, "i-"+ns, ns+"-host", corev1.ConditionFalse)
	notReadySince := node.Status.Conditions[0].LastTransitionTime
	bindPVC(t, m, pinnedPV(t, ns+"-host"))
	h := waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, health.ReasonNodeLost,
		"the Pod is pending", "node "+node.Name, "new volume elsewhere")
	if d := h.LastTransitionTime.Sub(notReadySince.Time); d < testGraces.NodeLost {
		t.Errorf("NodeLost %v after the Node turned NotReady, before the node-lost grace (%v)", d, testGraces.NodeLost)
	}
	wantMemberFailed(t, c, m, 1)
}

// TestPendingOnGoneNode: a Pending Pod whose bound volume is pinned to a Node that no longer
// exists makes the member Healthy=False/NodeLost without waiting.
func TestPendingOnGoneNode(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	waitPod(t, m)
	bindPVC(t, m, pinnedPV(t, ns+"-gone"))
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, health.ReasonNodeLost, "node "+ns+"-gone")
	wantMemberFailed(t, c, m, 1)
}

// createNode creates a Node carrying a hostname label with the given Ready status, as its
// kubelet would have reported it; it is deleted when the test ends.
func createNode(t *testing.T, name, hostname string, ready corev1.ConditionStatus) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: hostname}}}
	if err := k8sClient.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), node) })
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
		Reason: "KubeletNotReady", LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()}}
	if err := k8sClient.Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	return node
}

// pinnedPV creates a local PersistentVolume usable only on the Node with the given hostname;
// it is deleted when the test ends.
func pinnedPV(t *testing.T, hostname string) *corev1.PersistentVolume {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "local-" + hostname},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/var/lib/etcd-data"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname},
				}}}},
			}},
		},
	}
	if err := k8sClient.Create(t.Context(), pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), pv) })
	return pv
}

// bindPVC does the PV controller's part: it binds the member's PVC to pv.
func bindPVC(t *testing.T, m *etcdv1alpha2.EtcdMember, pv *corev1.PersistentVolume) {
	t.Helper()
	var pvc *corev1.PersistentVolumeClaim
	wait.Eventually(t, convergeTimeout, "the member's PVC exists", func(ctx context.Context) (err error) {
		pvc, err = getPVC(ctx, m)
		return err
	})
	base := pvc.DeepCopy()
	pvc.Spec.VolumeName = pv.Name
	if err := k8sClient.Patch(t.Context(), pvc, client.MergeFrom(base)); err != nil {
		t.Fatalf("binding PVC %s to %s: %v", pvc.Name, pv.Name, err)
	}
}

// healthyIs checks the member's Healthy condition.
func healthyIs(ctx context.Context, m *etcdv1alpha2.EtcdMember, status metav1.ConditionStatus, reason string) error {
	cur, err := getMember(ctx, m)
	if err != nil {
		return err
	}
	h := meta.FindStatusCondition(cur.Status.Conditions, etcdv1alpha2.ConditionHealthy)
	if h == nil || h.Status != status || h.Reason != reason {
		return fmt.Errorf("Healthy = %+v, want %s/%s", h, status, reason)
	}
	return nil
}
