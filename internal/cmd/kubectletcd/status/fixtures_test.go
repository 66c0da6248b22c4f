package status_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	goldenfile "github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

const (
	ns  = "tenant-a"
	mib = 1 << 20
)

// world is one cluster as the API server and etcd show it.
type world struct {
	cluster   *etcdv1alpha2.EtcdCluster
	members   []*etcdv1alpha2.EtcdMember
	pods      []*corev1.Pod
	pdb       *policyv1.PodDisruptionBudget
	snapshots []*etcdv1alpha2.EtcdSnapshot
	secrets   []*corev1.Secret
	// etcd's answers; statuses by member name.
	list     []etcdclient.Member
	statuses map[string]etcdclient.Status
	alarms   []etcdclient.Alarm
}

// healthy is three Ready, updated members of 3.6.5; etcd-4kq9d leads, the others lag by 2 and 1.
func healthy() *world {
	w := &world{
		cluster: &etcdv1alpha2.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd", Generation: 7},
			Spec:       etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.5"},
			Status: etcdv1alpha2.EtcdClusterStatus{
				ReadyMembers: 3, UpdatedMembers: 3, RunningVersion: "3.6.5", ClusterID: "8e9e05c52164694d", ObservedGeneration: 7,
				Conditions: []metav1.Condition{
					cond(etcdv1alpha2.ConditionAvailable, metav1.ConditionTrue, "QuorumHealthy", "3 of 3 voters are Ready"),
					cond(etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse, "Reconciled", "every member runs the latched target"),
					cond(etcdv1alpha2.ConditionDegraded, metav1.ConditionFalse, "QuorumHealthy", "every member is healthy"),
				},
			},
		},
		pdb: &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2))},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2},
		},
		statuses: map[string]etcdclient.Status{},
	}
	w.member("etcd-4kq9d", 0x6c1f0e2b8a4d7731, "node-a", false, 1000, 48*mib, 31*mib)
	w.member("etcd-7vx2m", 0xa03d5c9e11b2f408, "node-b", false, 998, 48*mib, 30*mib)
	w.member("etcd-x7k2p", 0xd4e8f61a97c0b2e5, "node-c", false, 999, 49*mib, 31*mib)
	w.snapshot("nightly-29409120", 2*time.Hour, etcdv1alpha2.SnapshotPhaseComplete, 47*mib, "3b1f0c2ad94e7b15c0ffee")
	w.snapshot("nightly-29407680", 26*time.Hour, etcdv1alpha2.SnapshotPhaseComplete, 46*mib, "9a0c11e5b2d3f4a6deadbeef")
	w.snapshot("nightly-29406240", 50*time.Hour, etcdv1alpha2.SnapshotPhaseFailed, 0, "")
	w.snapshot("nightly-29404800", 74*time.Hour, etcdv1alpha2.SnapshotPhaseComplete, 45*mib, "77aa")
	return w
}

func cond(t string, s metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(invocationtest.Now.Add(-time.Hour)), ObservedGeneration: 7}
}

// member adds a member with its Pod on node, listed by etcd and answering Status with the
// leader etcd-4kq9d; the leader is whichever member is added first.
func (w *world) member(name string, id uint64, node string, learner bool, applied uint64, db, inUse int64) {
	host := name + ".etcd." + ns + ".svc"
	w.members = append(w.members, &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{etcdv1alpha2.LabelCluster: "etcd"}},
		Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: "etcd", Version: "3.6.5"},
		Status: etcdv1alpha2.EtcdMemberStatus{
			MemberID: etcdclient.FormatID(id), PodName: name, IsVoter: !learner, PVCName: "data-" + name, Version: "3.6.5",
			Conditions: []metav1.Condition{
				cond(etcdv1alpha2.ConditionReady, metav1.ConditionTrue, "PodReady", ""),
				cond(etcdv1alpha2.ConditionUpdated, metav1.ConditionTrue, "TemplateCurrent", ""),
				cond(etcdv1alpha2.ConditionHealthy, metav1.ConditionTrue, "Healthy", ""),
			},
		},
	})
	w.pods = append(w.pods, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), Labels: map[string]string{etcdv1alpha2.LabelCluster: "etcd"}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	})
	w.list = append(w.list, etcdclient.Member{ID: id, Name: name, IsLearner: learner,
		PeerURLs: []string{"http://" + host + ":2380"}, ClientURLs: []string{"http://" + host + ":2379"}})
	leader := w.list[0].ID
	w.statuses[name] = etcdclient.Status{ID: id, Leader: leader, Version: "3.6.5", DBSize: db, DBSizeInUse: inUse,
		RaftIndex: 1000, RaftAppliedIndex: applied, RaftTerm: 4, IsLearner: learner}
}

// snapshot adds an EtcdSnapshot of the cluster that completed age ago.
func (w *world) snapshot(name string, age time.Duration, phase etcdv1alpha2.SnapshotPhase, size int64, sha string) {
	s := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(invocationtest.Now.Add(-age - time.Minute))},
		Spec:       etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}},
		Status:     etcdv1alpha2.EtcdSnapshotStatus{Phase: phase, CompletedAt: ptr.To(metav1.NewTime(invocationtest.Now.Add(-age)))},
	}
	if phase == etcdv1alpha2.SnapshotPhaseComplete {
		s.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: "s3://backups/etcd/" + name + ".db", SizeBytes: size, Checksum: "sha256:" + sha, Revision: 4711}
	}
	w.snapshots = append(w.snapshots, s)
}

// env is the world as a test's Deps.
func (w *world) env(t *testing.T) *invocationtest.Env {
	t.Helper()
	objs := []client.Object{w.cluster}
	for _, m := range w.members {
		objs = append(objs, m)
	}
	for _, p := range w.pods {
		objs = append(objs, p)
	}
	if w.pdb != nil {
		objs = append(objs, w.pdb)
	}
	for _, s := range w.snapshots {
		objs = append(objs, s)
	}
	for _, s := range w.secrets {
		objs = append(objs, s)
	}
	e := invocationtest.New(t, ns, objs...)
	e.Etcd.Members, e.Etcd.Alarms = w.list, w.alarms
	e.Etcd.Statuses = map[string]etcdclient.Status{}
	for name, st := range w.statuses {
		e.Etcd.Statuses[invocationtest.Endpoint(name)] = st
	}
	e.Etcd.StatusErr = etcdclient.NewError("Status", etcdclient.ErrUnavailable)
	return e
}

// golden compares got with testdata/name through the shared helper (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, name, []byte(got))
}
