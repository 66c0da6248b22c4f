package etcdcluster_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/guard"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// tick plays, for every EtcdMember of the namespace, the EtcdMember controller (PVC, Pod, status
// podName/podUID/pvcName/replicas and conditions Ready/Updated/Healthy), the kubelet (the Pod runs
// with an IP and is Ready) and the etcd process (it bootstraps, joins or stops in the fake).
func (w *world) tick(ctx context.Context) error {
	var clusters etcdv1alpha2.EtcdClusterList
	if err := k8s.List(ctx, &clusters, client.InNamespace(w.ns)); err != nil {
		return err
	}
	var errs []error
	for i := range clusters.Items {
		errs = append(errs, w.tickCluster(ctx, &clusters.Items[i]))
	}
	return errors.Join(errs...)
}

func (w *world) tickCluster(ctx context.Context, c *etcdv1alpha2.EtcdCluster) error {
	if w.real != nil {
		return w.real.tickCluster(ctx, w, c)
	}
	f := w.fake(c.Name)
	members, err := w.members(ctx, c.Name)
	if err != nil {
		return err
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return err
	}
	live := map[types.UID]bool{}
	for i := range members {
		live[members[i].UID] = true
	}
	// Garbage collection of Pods whose member is gone (envtest runs no garbage collector), by
	// UID: a member re-created under the same name does not own its predecessor's Pod.
	podOf := map[string]*corev1.Pod{}
	var errs []error
	for i := range pods.Items {
		pod := &pods.Items[i]
		if ref := metav1.GetControllerOf(pod); ref != nil && live[ref.UID] {
			podOf[pod.Name] = pod
			continue
		}
		for _, scheme := range []string{"http", "https"} {
			stopEtcd(f, scheme+"://"+desired.MemberHost(pod.Name, c.Name, c.Namespace)+":2380")
		}
		errs = append(errs, client.IgnoreNotFound(k8s.Delete(ctx, pod, client.GracePeriodSeconds(0))))
	}
	for i := range members {
		errs = append(errs, w.tickMember(ctx, c, f, &members[i], podOf[members[i].Name]))
	}
	return errors.Join(errs...)
}

func (w *world) tickMember(ctx context.Context, c *etcdv1alpha2.EtcdCluster, f *etcdfake.Cluster, m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) error {
	if w.kubeletOnly {
		return w.kubelet(ctx, c, f, m, pod)
	}
	peer := desired.PeerURL(m)
	wantPod := m.Spec.InitialCluster != "" && !m.Spec.Dormant && m.DeletionTimestamp.IsZero()
	switch {
	case !wantPod && pod != nil, pod != nil && restartForTemplate(m, pod):
		// Gone, or a rolling-update restart (the EtcdMember controller's rule: a PVC member's
		// Pod whose hash differs from the authorised one); the Pod comes back next tick.
		stopEtcd(f, peer)
		if err := client.IgnoreNotFound(k8s.Delete(ctx, pod, client.GracePeriodSeconds(0))); err != nil {
			return err
		}
		pod = nil
	case wantPod && pod == nil:
		if mine, err := w.ensurePVC(ctx, c, m); err != nil || !mine {
			return err // a PVC left by a predecessor of this name: wait for its re-adoption
		}
		created, err := w.runPod(ctx, f, m)
		if err != nil {
			return err
		}
		pod = created
	}
	voter := false
	if pod != nil {
		clientURL := membership.ClientURL(pod.Status.PodIP, servesTLS(m))
		if m.Spec.Bootstrap && c.Status.ClusterID == "" {
			f.Seed(m.Name, peer, clientURL)
		}
		running := w.runEtcd(f, m.Name, peer, clientURL)
		for _, e := range f.Members() {
			if e.Name == m.Name && !e.IsLearner {
				voter = true
			}
		}
		if err := w.labelRole(ctx, pod, m.Status.IsVoter); err != nil {
			return err
		}
		if err := w.podReadiness(ctx, pod, running && !w.isUnready(m.Name)); err != nil {
			return err
		}
	}
	return w.memberStatus(ctx, m, pod, voter)
}

// runPod creates the member's Pod and makes it Running and Ready with a fresh IP.
func (w *world) runPod(ctx context.Context, f *etcdfake.Cluster, m *etcdv1alpha2.EtcdMember) (*corev1.Pod, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, Labels: desired.MemberLabels(m.Spec.ClusterName, m.Name),
			Annotations:     map[string]string{etcdv1alpha2.AnnotationTemplateHash: w.podHash(m)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(m, etcdv1alpha2.GroupVersion.WithKind("EtcdMember"))},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v" + m.Spec.Version}}},
	}
	if err := k8s.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("creating Pod %s: %w", m.Name, err)
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: net0.allocate(f),
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		return nil, fmt.Errorf("starting Pod %s: %w", m.Name, err)
	}
	return pod, nil
}

// podReadiness sets the Pod's Ready condition.
func (w *world) podReadiness(ctx context.Context, pod *corev1.Pod, ready bool) error {
	want := corev1.ConditionFalse
	if ready {
		want = corev1.ConditionTrue
	}
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status == want {
				return nil
			}
			pod.Status.Conditions[i].Status = want
			return k8s.Status().Update(ctx, pod)
		}
	}
	return nil
}

func (w *world) labelRole(ctx context.Context, pod *corev1.Pod, voter bool) error {
	has := pod.Labels[etcdv1alpha2.LabelRole] == etcdv1alpha2.RoleVoter
	if has == voter {
		return nil
	}
	before := pod.DeepCopy()
	if voter {
		pod.Labels[etcdv1alpha2.LabelRole] = etcdv1alpha2.RoleVoter
	} else {
		delete(pod.Labels, etcdv1alpha2.LabelRole)
	}
	return k8s.Patch(ctx, pod, client.MergeFrom(before))
}

// ensurePVC creates the member's PVC unless it exists, and reports whether the PVC is the
// member's (by member-uid), as the EtcdMember controller checks before it starts a Pod.
func (w *world) ensurePVC(ctx context.Context, c *etcdv1alpha2.EtcdCluster, m *etcdv1alpha2.EtcdMember) (bool, error) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: desired.PVCName(m.Name), Namespace: m.Namespace, Labels: desired.MemberLabels(c.Name, m.Name),
			Annotations:     map[string]string{etcdv1alpha2.AnnotationMemberUID: string(m.UID)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(c, etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			// As the member controller builds it (desired.PVC): the member's size and class.
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: desired.StorageSize(m.Spec.Storage)}},
			StorageClassName: m.Spec.Storage.StorageClassName,
		},
	}
	err := k8s.Create(ctx, pvc)
	switch {
	case err == nil:
		return true, nil
	case !apierrors.IsAlreadyExists(err):
		return false, fmt.Errorf("creating PVC %s: %w", pvc.Name, err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
		return false, fmt.Errorf("reading PVC %s: %w", pvc.Name, err)
	}
	return pvc.Annotations[etcdv1alpha2.AnnotationMemberUID] == string(m.UID), nil
}

// memberStatus writes the fields the EtcdMember controller owns, only when they change.
func (w *world) memberStatus(ctx context.Context, m *etcdv1alpha2.EtcdMember, pod *corev1.Pod, voter bool) error {
	before := m.DeepCopy()
	ready, reason := metav1.ConditionFalse, "PodNotReady"
	switch {
	case m.Spec.Dormant:
		reason = "Paused"
		m.Status.Replicas, m.Status.PodName, m.Status.PodUID = 0, "", ""
	case pod != nil && !voter:
		reason = "Learner"
	case pod != nil && w.isUnready(m.Name):
	case pod != nil:
		ready, reason = metav1.ConditionTrue, "PodReady"
	}
	if pod != nil {
		m.Status.PodName, m.Status.PodUID, m.Status.Replicas = pod.Name, string(pod.UID), 1
	}
	m.Status.PVCName = desired.PVCName(m.Name)
	m.Status.Selector = etcdv1alpha2.LabelCluster + "=" + m.Spec.ClusterName + "," + etcdv1alpha2.LabelComponent + "=" + m.Name
	set := func(t string, s metav1.ConditionStatus, r string) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: r, Message: r, ObservedGeneration: m.Generation})
	}
	set(etcdv1alpha2.ConditionReady, ready, reason)
	if pod == nil || restartForTemplate(m, pod) {
		set(etcdv1alpha2.ConditionUpdated, metav1.ConditionFalse, "RestartPending")
	} else {
		set(etcdv1alpha2.ConditionUpdated, metav1.ConditionTrue, "TemplateCurrent")
	}
	set(etcdv1alpha2.ConditionHealthy, metav1.ConditionTrue, "Healthy")
	if equality.Semantic.DeepEqual(before.Status, m.Status) {
		return nil
	}
	return k8s.Status().Patch(ctx, m, client.MergeFrom(before))
}

// podHash is the template hash the EtcdMember controller stamps on a Pod it builds for m: the
// authorised one, which it checks a new Pod carries, or, without one, the hash of m's template
// under the default image repository and no guard (these tests run the cluster controller without one).
func (w *world) podHash(m *etcdv1alpha2.EtcdMember) string {
	if h := m.Annotations[etcdv1alpha2.AnnotationTemplateHash]; h != "" {
		return h
	}
	return desired.TemplateHash(&m.Spec, desired.MemberImages("", m.Spec.Version, w.guardImage), desired.CADigests{})
}

// runEtcd runs member name's etcd process (runEtcd) and records a member whose Pod ran while
// etcd did not list it yet: one staged by the operator, held by the data-dir guard.
func (w *world) runEtcd(f *etcdfake.Cluster, name, peer, clientURL string) bool {
	if runEtcd(f, name, peer, clientURL) {
		return true
	}
	if _, listed := f.ByPeerURL(peer); !listed {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.held == nil {
			w.held = map[string]bool{}
		}
		w.held[name] = true
	}
	return false
}

// heldMembers are the members whose Pods ran before etcd listed them, sorted.
func (w *world) heldMembers() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.held))
}

// servesTLS reports a member whose client API serves TLS: its etcd advertises an https client
// URL, which is how the operator dials it.
func servesTLS(m *etcdv1alpha2.EtcdMember) bool {
	return m.Spec.TLS != nil && m.Spec.TLS.ClientServerSecretRef != nil
}

// restartForTemplate is the EtcdMember controller's rolling-update rule, as the fake plays it:
// a PVC member's Pod is restarted when the member's authorised template hash is set and the
// Pod carries another.
func restartForTemplate(m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) bool {
	want := m.Annotations[etcdv1alpha2.AnnotationTemplateHash]
	return want != "" && pod.Annotations[etcdv1alpha2.AnnotationTemplateHash] != want &&
		m.Spec.Storage.Medium != etcdv1alpha2.StorageMediumMemory
}

// notReady makes the kubelet report the first n members' Pods not Ready from now on.
func (w *world) notReady(n int) {
	w.t.Helper()
	ms, err := w.members(w.t.Context(), w.onlyCluster())
	if err != nil {
		w.t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.unready == nil {
		w.unready = map[string]bool{}
	}
	for i := range min(n, len(ms)) {
		w.unready[ms[i].Name] = true
	}
}

// onlyCluster is the name of the namespace's only EtcdCluster.
func (w *world) onlyCluster() string {
	w.t.Helper()
	var list etcdv1alpha2.EtcdClusterList
	if err := k8s.List(w.t.Context(), &list, client.InNamespace(w.ns)); err != nil || len(list.Items) != 1 {
		w.t.Fatalf("want one EtcdCluster in %s: %v", w.ns, err)
	}
	return list.Items[0].Name
}

func (w *world) isUnready(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unready[name]
}

// kubelet runs the Pod the real EtcdMember controller created: a new Pod gets an IP and becomes
// Running and Ready, a terminating one is removed at once, and the member's etcd process follows.
func (w *world) kubelet(ctx context.Context, c *etcdv1alpha2.EtcdCluster, f *etcdfake.Cluster, m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) error {
	peer := desired.PeerURL(m)
	switch {
	case pod == nil:
		return nil
	case !pod.DeletionTimestamp.IsZero():
		stopEtcd(f, peer)
		return client.IgnoreNotFound(k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	case pod.Status.PodIP == "" && !w.schedulable(pod):
		return w.unschedulable(ctx, pod)
	case pod.Status.PodIP == "" && slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return strings.HasSuffix(c.Image, missingImageTag) }):
		return imagePullFails(ctx, pod)
	case pod.Status.PodIP == "":
		pod.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: net0.allocate(f),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		}
		if err := k8s.Status().Update(ctx, pod); err != nil {
			return fmt.Errorf("starting Pod %s: %w", pod.Name, err)
		}
	}
	if w.isUnready(m.Name) {
		// Its process is down: etcd cannot reach it and its Pod is not Ready.
		stopEtcd(f, peer)
		return w.podReadiness(ctx, pod, false)
	}
	clientURL := membership.ClientURL(pod.Status.PodIP, servesTLS(m))
	if m.Spec.Bootstrap && c.Status.ClusterID == "" {
		f.Seed(m.Name, peer, clientURL)
	}
	running := w.runEtcd(f, m.Name, peer, clientURL)
	w.guardForces(f, pod)
	return w.podReadiness(ctx, pod, running)
}

// guardForces plays the data-dir guard of quorum-loss recovery (docs/design/quorum-recovery.md):
// once per Pod, the force-new-cluster annotation restarts the member's etcd with
// --force-new-cluster when the value names this member.
func (w *world) guardForces(f *etcdfake.Cluster, pod *corev1.Pod) {
	value := pod.Annotations[etcdv1alpha2.AnnotationForceNewCluster]
	parts := strings.Split(value, "/")
	if len(parts) != 4 {
		return
	}
	id, term, index, ok := f.LogTail(membership.ClientURL(pod.Status.PodIP, false))
	if !ok || parts[1] != etcdclient.FormatID(id) || parts[2] != strconv.FormatUint(term, 10) || parts[3] != strconv.FormatUint(index, 10) {
		return
	}
	w.mu.Lock()
	if w.forced == nil {
		w.forced = map[types.UID]bool{}
	}
	done := w.forced[pod.UID]
	w.forced[pod.UID] = true
	w.mu.Unlock()
	if !done {
		_ = f.ForceNewCluster(id)
	}
}

// logTail is the log-tail reader of a fake world: the fake member serving the Pod IP, in the
// cluster ID the operator latched.
func (w *world) logTail(_ context.Context, podIP string) (guard.LogTailAnswer, error) {
	w.mu.Lock()
	fakes := maps.Clone(w.fakes)
	clusterIDs := maps.Clone(w.clusterIDs)
	w.mu.Unlock()
	for name, f := range fakes {
		if id, term, index, ok := f.LogTail(membership.ClientURL(podIP, false)); ok {
			return guard.LogTailAnswer{MemberID: etcdclient.FormatID(id), ClusterID: clusterIDs[name], Term: term, Index: index}, nil
		}
	}
	return guard.LogTailAnswer{}, fmt.Errorf("no member at %s", podIP)
}

// fakeSchedulerMessage is what the scheduler says of a Pod whose nodeSelector no node matches.
const fakeSchedulerMessage = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."

// schedulable reports whether the fake node's labels satisfy the Pod's nodeSelector.
func (w *world) schedulable(pod *corev1.Pod) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, v := range pod.Spec.NodeSelector {
		if w.nodeLabels[k] != v {
			return false
		}
	}
	return true
}

// unschedulable plays the scheduler that cannot place the Pod (envtest has none): Pending with
// PodScheduled=False/Unschedulable, written once through the status subresource.
func (w *world) unschedulable(ctx context.Context, pod *corev1.Pod) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return nil
		}
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: fakeSchedulerMessage, LastTransitionTime: metav1.Now()})
	if err := k8s.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("marking Pod %s unschedulable: %w", pod.Name, err)
	}
	return nil
}

// missingImageTag is the tag of an etcd image no registry has: the fake kubelet cannot pull it.
const missingImageTag = ":v3.6.99"

// imagePullFails plays the kubelet that cannot pull the Pod's image: Pending, its etcd container
// waiting in ImagePullBackOff with the kubelet's words, written once through the status
// subresource.
func imagePullFails(ctx context.Context, pod *corev1.Pod) error {
	if len(pod.Status.ContainerStatuses) > 0 {
		return nil
	}
	pod.Status.Phase = corev1.PodPending
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
				Message: "Back-off pulling image \"" + c.Image + "\": not found"}}})
	}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("marking Pod %s's image not pullable: %w", pod.Name, err)
	}
	return nil
}

// labelNode sets a label on the fake node, as "kubectl label node" would.
func (w *world) labelNode(k, v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nodeLabels == nil {
		w.nodeLabels = map[string]string{}
	}
	w.nodeLabels[k] = v
}
