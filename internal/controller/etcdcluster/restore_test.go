package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// restorePod is the seed's Pod whose restore init container last ended with t.
func restorePod(t *corev1.ContainerStateTerminated) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
		Name: desired.RestoreContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: t},
	}}}}
}

// TestRestoreFailureFromTerminationMessage reads the agent's reason and message from the seed
// Pod's init container status, quotes what the kubelet kept when the agent wrote no result, and
// reports nothing for a member that does not restore or once the cluster formed.
func TestRestoreFailureFromTerminationMessage(t *testing.T) {
	t.Parallel()
	o := testObservation(&etcdfake.Recorder{}, member("m", false))
	seed := &o.members[0]
	seed.Spec.Bootstrap = true
	seed.Spec.Restore = &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "b", SubPath: "x.db"}}}
	agentSaid := string(restore.EncodeTerminationMessage(restore.Result{Reason: restore.ReasonVersionTooNew, Message: "the snapshot was taken from etcd 3.7.3"}))
	cluster := o.cluster.DeepCopy()
	cluster.Status.ClusterID = ""
	for name, c := range map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"agent's result": {restorePod(&corev1.ContainerStateTerminated{ExitCode: 2, Message: agentSaid}), "VersionTooNew: the snapshot was taken from etcd 3.7.3"},
		"killed":         {restorePod(&corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}), "OOMKilled: the restore container exited with code 137"},
		"log tail": {restorePod(&corev1.ContainerStateTerminated{ExitCode: 2, Message: "panic: boom\n\ngoroutine 1\n" + strings.Repeat("x", 1000)}),
			"Failed: the restore container exited with code 2: panic: boom goroutine 1 xxx"},
		"no Pod":    {nil, ""},
		"succeeded": {&corev1.Pod{}, ""},
	} {
		got := restoreFailure(cluster, seed, c.pod)
		if !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") || len(got) > 400 {
			t.Errorf("%s: restoreFailure = %q, want %q", name, got, c.want)
		}
	}
	failed := restorePod(&corev1.ContainerStateTerminated{ExitCode: 2, Message: agentSaid})
	formed := cluster.DeepCopy()
	formed.Status.ClusterID = "cid"
	other := seed.DeepCopy()
	other.Spec.Bootstrap = false
	if got := restoreFailure(formed, seed, failed) + restoreFailure(cluster, other, failed); got != "" {
		t.Errorf("formed cluster or another member: %q", got)
	}
}
