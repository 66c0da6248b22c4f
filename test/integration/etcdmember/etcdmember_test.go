package etcdmember_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

func TestPVCAndPodCreated(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "")
	m := newMember(t, c, func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.Bootstrap = true
		m.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{
			Labels: map[string]string{"team": "storage"}, Annotations: map[string]string{"note": "n1"},
		}
	})

	waitPod(t, m)
	// additionalMetadata is applied right after each creation, in a write of its own.
	var pod *corev1.Pod
	var pvc *corev1.PersistentVolumeClaim
	wait.Eventually(t, convergeTimeout, "Pod and PVC carry additionalMetadata", func(ctx context.Context) (err error) {
		if pod, err = getPod(ctx, m); err != nil {
			return err
		}
		if pvc, err = getPVC(ctx, m); err != nil {
			return err
		}
		if pod.Labels["team"] == "" || pod.Annotations["note"] == "" || pvc.Labels["team"] == "" {
			return fmt.Errorf("Pod %v %v, PVC %v", pod.Labels, pod.Annotations, pvc.Labels)
		}
		return nil
	})
	m, _ = getMember(t.Context(), m)
	checkPVC(t, pvc, c, m)
	checkPod(t, pod, m, pvc)

	wait.Eventually(t, convergeTimeout, "finalizer and status name the Pod and PVC", func(ctx context.Context) error {
		cur, err := getMember(ctx, m)
		if err != nil {
			return err
		}
		s := cur.Status
		wantSel := etcdv1alpha2.LabelCluster + "=" + c.Name + "," + etcdv1alpha2.LabelComponent + "=" + m.Name
		if !slices.Contains(cur.Finalizers, etcdv1alpha2.FinalizerMemberCleanup) || s.PodName != m.Name || s.PodUID != string(pod.UID) ||
			s.PVCName != pvc.Name || s.Replicas != 1 || s.Selector != wantSel {
			return fmt.Errorf("finalizers %v, status %+v", cur.Finalizers, s)
		}
		return nil
	})
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPodNotReady)

	wait.Eventually(t, convergeTimeout, "Events for the PVC and Pod creation", func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := k8sClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		got := map[string]bool{}
		for _, e := range list.Items {
			got[e.Regarding.Kind+"/"+e.Regarding.Name+"/"+e.Reason] = true
		}
		for _, want := range []string{"EtcdMember/" + m.Name + "/" + etcdmember.EventPVCCreated, "EtcdMember/" + m.Name + "/" + etcdmember.EventPodCreated,
			"EtcdCluster/" + c.Name + "/" + etcdmember.EventPodCreated} {
			if !got[want] {
				return fmt.Errorf("no Event %s among %v", want, got)
			}
		}
		return nil
	})
}

// checkPVC asserts a freshly created member PVC: owned by the cluster (reclaimPolicy Delete),
// never by the member, with member-uid and the member labels.
func checkPVC(t *testing.T, pvc *corev1.PersistentVolumeClaim, c *etcdv1alpha2.EtcdCluster, m *etcdv1alpha2.EtcdMember) {
	t.Helper()
	if ref := metav1.GetControllerOf(pvc); ref == nil || ref.Kind != "EtcdCluster" || ref.UID != c.UID || len(pvc.OwnerReferences) != 1 {
		t.Errorf("PVC owner references = %+v, want only the EtcdCluster as controller", pvc.OwnerReferences)
	}
	if got := pvc.Annotations[etcdv1alpha2.AnnotationMemberUID]; got != string(m.UID) {
		t.Errorf("PVC member-uid = %q, want %q", got, m.UID)
	}
	if pvc.Labels[etcdv1alpha2.LabelComponent] != m.Name || pvc.Labels[etcdv1alpha2.LabelCluster] != c.Name || pvc.Labels["team"] != "storage" {
		t.Errorf("PVC labels = %v", pvc.Labels)
	}
}

// checkPod asserts a freshly created seed Pod: controlled by the member, labelled, built from
// the member with the seed's initial cluster state, mounting the PVC.
func checkPod(t *testing.T, pod *corev1.Pod, m *etcdv1alpha2.EtcdMember, pvc *corev1.PersistentVolumeClaim) {
	t.Helper()
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.Kind != "EtcdMember" || ref.UID != m.UID {
		t.Errorf("Pod controller = %+v, want EtcdMember %s", ref, m.UID)
	}
	if pod.Labels[etcdv1alpha2.LabelComponent] != m.Name || pod.Labels["team"] != "storage" || pod.Annotations["note"] != "n1" {
		t.Errorf("Pod metadata: labels %v annotations %v", pod.Labels, pod.Annotations)
	}
	if _, ok := pod.Labels[etcdv1alpha2.LabelRole]; ok {
		t.Error("a member that is not a voter yet got role=voter")
	}
	if pod.Annotations[etcdv1alpha2.AnnotationTemplateHash] == "" {
		t.Error("Pod has no template-hash annotation")
	}
	if got, want := pod.Spec.Containers[0].Image, imageRepository+":v3.6.5"; got != want {
		t.Errorf("image = %q, want %q", got, want)
	}
	for _, arg := range []string{"--name=" + m.Name, "--initial-cluster-state=new", "--initial-cluster=" + m.Spec.InitialCluster} {
		if !hasArg(pod, arg) {
			t.Errorf("Pod args %v lack %s", pod.Spec.Containers[0].Args, arg)
		}
	}
	if pod.Spec.Volumes[0].PersistentVolumeClaim == nil || pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Name {
		t.Errorf("data volume = %+v, want PVC %s", pod.Spec.Volumes[0], pvc.Name)
	}
	// The seed's first Pod: etcd runs under the data-dir guard, which expects no data yet.
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Image != guardImage {
		t.Errorf("init containers %+v, want the guard installed from %s", pod.Spec.InitContainers, guardImage)
	}
	if cmd := pod.Spec.Containers[0].Command; len(cmd) == 0 || cmd[0] != desired.GuardBinary || slices.Contains(cmd, "--data-expected") {
		t.Errorf("etcd command %q, want the guard without --data-expected", cmd)
	}
}

func TestReadyAndRoleFollowEtcd(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	pod := waitPod(t, m)

	// The kubelet starts it; the cluster controller learns its ID; it is promoted.
	markPodRunning(t, pod, "10.0.0.1", true)
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonDiscoveringMemberID)
	setMemberStatus(t, m, "a1", false)
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonLearner)
	setMemberStatus(t, m, "a1", true)
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionTrue, etcdmember.ReasonPodReady)
	waitRoleLabel(t, m, true)
	waitCondition(t, m, etcdv1alpha2.ConditionUpdated, metav1.ConditionTrue, etcdmember.ReasonTemplateCurrent)

	// No longer a voter in etcd's list: the label goes, so the client Service and the PDB drop it.
	setMemberStatus(t, m, "a1", false)
	waitRoleLabel(t, m, false)

	// An authorised template the Pod does not run is reported, not acted on.
	patchMember(t, m, func(m *etcdv1alpha2.EtcdMember) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[etcdv1alpha2.AnnotationTemplateHash] = "0000000000"
	})
	waitCondition(t, m, etcdv1alpha2.ConditionUpdated, metav1.ConditionFalse, etcdmember.ReasonRestartPending)
	if p, err := getPod(t.Context(), m); err != nil || p.UID != pod.UID {
		t.Errorf("the Pod was replaced after a hash change: %v", err)
	}
}

// waitRoleLabel waits until the member's Pod has (or lacks) role=voter.
func waitRoleLabel(t *testing.T, m *etcdv1alpha2.EtcdMember, voter bool) {
	t.Helper()
	wait.Eventually(t, convergeTimeout, fmt.Sprintf("role=voter present=%v", voter), func(ctx context.Context) error {
		p, err := getPod(ctx, m)
		if err != nil {
			return err
		}
		if (p.Labels[etcdv1alpha2.LabelRole] == etcdv1alpha2.RoleVoter) != voter {
			return fmt.Errorf("labels %v", p.Labels)
		}
		return nil
	})
}

func TestAdditionalMetadataInPlace(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c, func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{
			Labels: map[string]string{"team": "storage"}, Annotations: map[string]string{"note": "n1"},
		}
	})
	pod := waitPod(t, m)
	patchMember(t, m, func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.AdditionalMetadata.Labels["team"] = "platform"
		m.Spec.AdditionalMetadata.Labels[etcdv1alpha2.LabelComponent] = "spoof"
		m.Spec.AdditionalMetadata.Annotations["extra"] = "e1"
	})
	wait.Eventually(t, convergeTimeout, "additionalMetadata in place on Pod and PVC", func(ctx context.Context) error {
		p, err := getPod(ctx, m)
		if err != nil {
			return err
		}
		v, err := getPVC(ctx, m)
		if err != nil {
			return err
		}
		if p.UID != pod.UID {
			return errors.New("the Pod was replaced")
		}
		if p.Labels["team"] != "platform" || p.Annotations["extra"] != "e1" || v.Labels["team"] != "platform" || v.Annotations["extra"] != "e1" {
			return fmt.Errorf("Pod %v %v, PVC %v %v", p.Labels, p.Annotations, v.Labels, v.Annotations)
		}
		if p.Labels[etcdv1alpha2.LabelComponent] != m.Name {
			return fmt.Errorf("the operator's label lost to additionalMetadata: %v", p.Labels)
		}
		return nil
	})

	// Someone else labels the Pod; then keys leave the spec. The operator removes exactly the
	// keys it had applied.
	cur, err := getPod(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Patch(t.Context(), cur, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"someone":"else"}}}`))); err != nil {
		t.Fatal(err)
	}
	patchMember(t, m, func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Annotations: map[string]string{"extra": "e1"}}
	})
	wait.Eventually(t, convergeTimeout, "keys dropped from additionalMetadata disappear", func(ctx context.Context) error {
		return droppedMetadataGone(ctx, m)
	})
}

// droppedMetadataGone checks TestAdditionalMetadataInPlace's end state: label team and annotation
// note gone from Pod and PVC, annotation extra kept, and the keys the operator never applied
// (someone's label, the operator's own) untouched.
func droppedMetadataGone(ctx context.Context, m *etcdv1alpha2.EtcdMember) error {
	p, err := getPod(ctx, m)
	if err != nil {
		return err
	}
	v, err := getPVC(ctx, m)
	if err != nil {
		return err
	}
	for _, obj := range []metav1.Object{p, v} {
		if _, ok := obj.GetLabels()["team"]; ok {
			return fmt.Errorf("%s still has label team: %v", obj.GetName(), obj.GetLabels())
		}
		if _, ok := obj.GetAnnotations()["note"]; ok {
			return fmt.Errorf("%s still has annotation note: %v", obj.GetName(), obj.GetAnnotations())
		}
		if obj.GetAnnotations()["extra"] != "e1" {
			return fmt.Errorf("%s lost annotation extra: %v", obj.GetName(), obj.GetAnnotations())
		}
	}
	if p.Labels["someone"] != "else" || p.Labels[etcdv1alpha2.LabelComponent] != m.Name || p.Annotations[etcdv1alpha2.AnnotationTemplateHash] == "" {
		return fmt.Errorf("keys the operator did not apply were touched: %v %v", p.Labels, p.Annotations)
	}
	return nil
}

func TestNoPodWhileInitialClusterEmpty(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c, func(m *etcdv1alpha2.EtcdMember) { m.Spec.InitialCluster = "" })

	wait.Eventually(t, convergeTimeout, "PVC created for a pending member", func(ctx context.Context) error {
		_, err := getPVC(ctx, m)
		return err
	})
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPodNotReady, "initialCluster")
	wait.Consistently(t, steadyWindow, "no Pod while initialCluster is empty", func(ctx context.Context) error {
		if _, err := getPod(ctx, m); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Pod lookup: %w", err)
		}
		return nil
	})

	// The cluster controller adds it to a formed cluster: it joins as "existing".
	patchMember(t, m, func(cur *etcdv1alpha2.EtcdMember) {
		cur.Spec.InitialCluster = "seed=http://seed.etcd." + ns + ".svc:2380," + cur.Name + "=http://" + cur.Name + ".etcd." + ns + ".svc:2380"
	})
	pod := waitPod(t, m)
	if !hasArg(pod, "--initial-cluster-state=existing") {
		t.Errorf("a member joining a formed cluster got args %v", pod.Spec.Containers[0].Args)
	}
}

func TestDormantDeletesPodKeepsPVC(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	pod := waitPod(t, m)
	pvc, err := getPVC(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}

	patchMember(t, m, func(m *etcdv1alpha2.EtcdMember) { m.Spec.Dormant = true })
	waitGone(t, pod)
	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPaused, pvc.Name)
	wait.Eventually(t, convergeTimeout, "replicas 0 while dormant", func(ctx context.Context) error {
		cur, err := getMember(ctx, m)
		if err != nil {
			return err
		}
		if cur.Status.Replicas != 0 {
			return fmt.Errorf("replicas %d", cur.Status.Replicas)
		}
		return nil
	})
	wait.Consistently(t, steadyWindow, "PVC kept and no Pod while dormant", func(ctx context.Context) error {
		v, err := getPVC(ctx, m)
		if err != nil || v.UID != pvc.UID {
			return fmt.Errorf("PVC: %w", err)
		}
		if _, err := getPod(ctx, m); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Pod lookup: %w", err)
		}
		return nil
	})

	// Woken: a new Pod on the same PVC, as "existing".
	patchMember(t, m, func(m *etcdv1alpha2.EtcdMember) { m.Spec.Dormant = false })
	woken := waitPod(t, m)
	if woken.UID == pod.UID || !hasArg(woken, "--initial-cluster-state=existing") {
		t.Errorf("woken Pod: uid %s (old %s), args %v", woken.UID, pod.UID, woken.Spec.Containers[0].Args)
	}
}

func TestFailedPodRecreatedFromPVC(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c)
	pod := waitPod(t, m)
	pvc, err := getPVC(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}

	// Evicted: the kubelet marks the Pod Failed.
	base := pod.DeepCopy()
	pod.Status.Phase = corev1.PodFailed
	pod.Status.Reason = "Evicted"
	if err := k8sClient.Status().Patch(t.Context(), pod, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "a new Pod replaces the Failed one", func(ctx context.Context) error {
		p, err := getPod(ctx, m)
		if err != nil {
			return err
		}
		if p.UID == pod.UID {
			return errors.New("still the Failed Pod")
		}
		return nil
	})
	if v, err := getPVC(t.Context(), m); err != nil || v.UID != pvc.UID {
		t.Errorf("the PVC changed across the Pod's recreation: %v", err)
	}
}

// A PVC member that has run gets Pods whose guard expects data, so an emptied volume is refused
// even on the Pod's first start.
func TestRecreatedPodExpectsData(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1e")
	m := newMember(t, c)
	pod := waitPod(t, m)
	setMemberStatus(t, m, "8e9e05c52164694d", true)
	if err := k8sClient.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "a new Pod whose guard expects data", func(ctx context.Context) error {
		p, err := getPod(ctx, m)
		if err != nil {
			return err
		}
		if p.UID == pod.UID {
			return errors.New("still the first Pod")
		}
		if cmd := p.Spec.Containers[0].Command; !slices.Contains(cmd, "--data-expected") {
			return fmt.Errorf("etcd command %q lacks --data-expected", cmd)
		}
		return nil
	})
}

func TestMemoryMemberPodNotRecreated(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "c1d")
	m := newMember(t, c, func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
		m.Spec.Storage.Size = ptr.To(resource.MustParse("256Mi"))
	})
	pod := waitPod(t, m)
	if pod.Spec.Volumes[0].EmptyDir == nil || pod.Spec.Volumes[0].EmptyDir.Medium != corev1.StorageMediumMemory {
		t.Errorf("data volume = %+v, want a Memory emptyDir", pod.Spec.Volumes[0])
	}
	if _, err := getPVC(t.Context(), m); !apierrors.IsNotFound(err) {
		t.Errorf("a Memory member got a PVC: %v", err)
	}
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
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, etcdmember.ReasonDataLost)
	wait.Consistently(t, steadyWindow, "a Memory member's lost Pod is not recreated", func(ctx context.Context) error {
		if _, err := getPod(ctx, m); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Pod lookup: %w", err)
		}
		return nil
	})
}
