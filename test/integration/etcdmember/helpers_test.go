package etcdmember_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// Polling bounds. convergeTimeout covers a reconcile or two on a loaded CI machine; the
// controller acts on watch events, so a healthy run converges in well under a second.
const (
	convergeTimeout = 30 * time.Second
	// steadyWindow is how long a "nothing happens" assertion watches.
	steadyWindow = 3 * time.Second
)

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	return apiserver.NewNamespace(t, k8sClient, "member-")
}

// newCluster creates an EtcdCluster with the given reclaim policy and, when clusterID is not
// empty, a latched cluster ID (as the EtcdCluster controller would write it).
func newCluster(t *testing.T, ns, name string, policy etcdv1alpha2.ReclaimPolicy, clusterID string) *etcdv1alpha2.EtcdCluster {
	t.Helper()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{
			Version: "3.6.5", Replicas: ptr.To[int32](1),
			Storage: etcdv1alpha2.StorageSpec{ReclaimPolicy: policy},
		},
	}
	if err := k8sClient.Create(t.Context(), c); err != nil {
		t.Fatalf("creating EtcdCluster %s: %v", name, err)
	}
	if clusterID != "" {
		c.Status.ClusterID = clusterID
		if err := k8sClient.Status().Update(t.Context(), c); err != nil {
			t.Fatalf("setting the cluster ID: %v", err)
		}
	}
	return c
}

// newMember creates an EtcdMember of c as the EtcdCluster controller would (GenerateName,
// controller reference to the cluster), adjusted by opts before creation.
func newMember(t *testing.T, c *etcdv1alpha2.EtcdCluster, opts ...func(*etcdv1alpha2.EtcdMember)) *etcdv1alpha2.EtcdMember {
	t.Helper()
	m := &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.Namespace, GenerateName: c.Name + "-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdCluster", Name: c.Name, UID: c.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: etcdv1alpha2.EtcdMemberSpec{
			ClusterName: c.Name, Version: "3.6.5", ClusterToken: c.Namespace + "-" + c.Name,
			InitialCluster: "placeholder",
		},
	}
	for _, o := range opts {
		o(m)
	}
	ownPeer := func(m *etcdv1alpha2.EtcdMember) string {
		return m.Name + "=http://" + m.Name + "." + c.Name + "." + c.Namespace + ".svc:2380"
	}
	// The usual case is the member's own peer URL, which needs the generated name: such a
	// member is created pending, then given its initialCluster, as the EtcdCluster controller
	// does (create, then patch).
	patchLater := m.Spec.InitialCluster == "placeholder" && m.Name == ""
	switch {
	case patchLater:
		m.Spec.InitialCluster = ""
	case m.Spec.InitialCluster == "placeholder":
		m.Spec.InitialCluster = ownPeer(m)
	}
	if err := k8sClient.Create(t.Context(), m); err != nil {
		t.Fatalf("creating an EtcdMember: %v", err)
	}
	if patchLater {
		patchMember(t, m, func(cur *etcdv1alpha2.EtcdMember) { cur.Spec.InitialCluster = ownPeer(cur) })
		m.Spec.InitialCluster = ownPeer(m)
	}
	return m
}

// patchMember changes a member's metadata or spec with a merge patch.
func patchMember(t *testing.T, m *etcdv1alpha2.EtcdMember, mutate func(*etcdv1alpha2.EtcdMember)) {
	t.Helper()
	cur := &etcdv1alpha2.EtcdMember{}
	if err := k8sClient.Get(t.Context(), client.ObjectKeyFromObject(m), cur); err != nil {
		t.Fatalf("reading EtcdMember %s: %v", m.Name, err)
	}
	base := cur.DeepCopy()
	mutate(cur)
	if err := k8sClient.Patch(t.Context(), cur, client.MergeFrom(base)); err != nil {
		t.Fatalf("patching EtcdMember %s: %v", m.Name, err)
	}
}

// setMemberStatus writes the status fields the EtcdCluster controller owns, with a merge patch
// that carries only them.
func setMemberStatus(t *testing.T, m *etcdv1alpha2.EtcdMember, memberID string, voter bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"status":{"memberID":%q,"isVoter":%v}}`, memberID, voter)
	if err := k8sClient.Status().Patch(t.Context(), m, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("setting member status: %v", err)
	}
}

// getMember reads a member.
func getMember(ctx context.Context, m *etcdv1alpha2.EtcdMember) (*etcdv1alpha2.EtcdMember, error) {
	cur := &etcdv1alpha2.EtcdMember{}
	err := k8sClient.Get(ctx, client.ObjectKeyFromObject(m), cur)
	return cur, err
}

// getPod reads the member's Pod.
func getPod(ctx context.Context, m *etcdv1alpha2.EtcdMember) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, p)
	return p, err
}

// getPVC reads the member's PVC.
func getPVC(ctx context.Context, m *etcdv1alpha2.EtcdMember) (*corev1.PersistentVolumeClaim, error) {
	p := &corev1.PersistentVolumeClaim{}
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: "data-" + m.Name}, p)
	return p, err
}

// waitPod waits for the member's Pod.
func waitPod(t *testing.T, m *etcdv1alpha2.EtcdMember) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	wait.Eventually(t, convergeTimeout, "Pod "+m.Name+" exists", func(ctx context.Context) (err error) {
		p, err = getPod(ctx, m)
		return err
	})
	return p
}

// markPodRunning does the kubelet's part: phase Running, a start time, an IP, the etcd
// container running, and the Ready condition.
func markPodRunning(t *testing.T, p *corev1.Pod, ip string, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	base := p.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = ptr.To(p.CreationTimestamp)
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: desired.ContainerName, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	// A merge patch without resourceVersion: the controller may have changed the Pod's metadata
	// since p was read.
	if err := k8sClient.Status().Patch(t.Context(), p, client.MergeFrom(base)); err != nil {
		t.Fatalf("setting Pod %s status: %v", p.Name, err)
	}
}

// containerExit is one exit of the etcd container as the kubelet reports it.
type containerExit struct {
	// reason is the runtime's: "Error", "OOMKilled".
	reason string
	// exitCode is the process's exit code (137 when killed).
	exitCode int32
	// message is the termination message: with FallbackToLogsOnError, the tail of etcd's log.
	message string
}

// crashContainer does the kubelet's part when the Pod's etcd container exits: the Pod is no
// longer Ready, restartCount counts the restarts so far, and the container is either still
// terminated (state.terminated is the latest exit, lastState.terminated the one before, when
// given) or waiting in CrashLoopBackOff (lastState.terminated is the latest exit).
func crashContainer(t *testing.T, m *etcdv1alpha2.EtcdMember, restarts int32, waiting bool, latest containerExit, before *containerExit) {
	t.Helper()
	p, err := getPod(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	base := p.DeepCopy()
	term := func(e containerExit) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: e.exitCode, Reason: e.reason, Message: e.message,
			FinishedAt: metav1.Now()}
	}
	cs := corev1.ContainerStatus{Name: desired.ContainerName, RestartCount: restarts}
	if waiting {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		cs.LastTerminationState.Terminated = term(latest)
	} else {
		cs.State.Terminated = term(latest)
		if before != nil {
			cs.LastTerminationState.Terminated = term(*before)
		}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady && p.Status.Conditions[i].Status == corev1.ConditionTrue {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, metav1.Now()
		}
	}
	if err := k8sClient.Status().Patch(t.Context(), p, client.MergeFrom(base)); err != nil {
		t.Fatalf("reporting the container's exit on Pod %s: %v", p.Name, err)
	}
}

// fixtureMessage is a termination message captured from a real etcd process
// (internal/health/testdata/<minor>/<name>.log), cut the way the kubelet cuts it.
func fixtureMessage(t *testing.T, minor, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "internal", "health", "testdata", minor, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return health.TerminationMessageTail(b)
}

// waitCondition waits until the member's condition has the given status and reason and, when
// given, a message containing each of contains.
func waitCondition(t *testing.T, m *etcdv1alpha2.EtcdMember, condType string, status metav1.ConditionStatus, reason string, contains ...string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	wait.Eventually(t, convergeTimeout, fmt.Sprintf("%s=%s/%s on %s", condType, status, reason, m.Name), func(ctx context.Context) error {
		cur, err := getMember(ctx, m)
		if err != nil {
			return err
		}
		got = meta.FindStatusCondition(cur.Status.Conditions, condType)
		if got == nil {
			return errors.New("no such condition")
		}
		if got.Status != status || got.Reason != reason {
			return fmt.Errorf("%s/%s: %s", got.Status, got.Reason, got.Message)
		}
		for _, sub := range contains {
			if !strings.Contains(got.Message, sub) {
				return fmt.Errorf("%s/%s: message %q lacks %q", got.Status, got.Reason, got.Message, sub)
			}
		}
		return nil
	})
	return got
}

// waitGone waits until obj no longer exists.
func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	wait.Eventually(t, convergeTimeout, obj.GetName()+" is gone", func(ctx context.Context) error {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still exists (finalizers %v, deletionTimestamp %v)", obj.GetFinalizers(), obj.GetDeletionTimestamp())
	})
}

// hasArg reports whether the Pod's etcd container has the argument.
func hasArg(p *corev1.Pod, arg string) bool {
	for _, c := range p.Spec.Containers {
		for _, a := range c.Args {
			if a == arg {
				return true
			}
		}
	}
	return false
}

// countEvents counts the Events of one type and reason regarding an object, repeats folded into
// a series included.
func countEvents(ctx context.Context, ns, regarding, eventType, reason string) (int, error) {
	var list eventsv1.EventList
	if err := k8sClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range list.Items {
		if e.Reason != reason || e.Regarding.Name != regarding || e.Type != eventType {
			continue
		}
		n++
		if e.Series != nil {
			n += int(e.Series.Count) - 1
		}
	}
	return n, nil
}
