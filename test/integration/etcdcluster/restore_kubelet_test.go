package etcdcluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/restoreagent"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
)

// restoreBackoff stands in for the kubelet's back-off between runs of a failed init container.
const restoreBackoff = time.Second

// claimDir is the folder standing in for PVC claim, as a restore init container mounts it.
func (r *realEtcd) claimDir(claim string) string {
	return filepath.Join(r.dir, "claims", claim)
}

// restoreInit plays the restore init container of a new Pod that has one: the real restore
// agent runs in-process with the container's environment, its paths and service hosts rewritten
// as the etcd flags are (localise): the data volume to volumeDir, the claim to claimDir, the
// image's etcdutl to r.etcdutl. done is true when there is no restore or it succeeded, so that
// etcd may start; a failure is reported in the Pod's status as the kubelet does (Pending, the
// container waiting in back-off with its last run's termination message), and retried after
// restoreBackoff.
func (r *realEtcd) restoreInit(ctx context.Context, pod *corev1.Pod, volumeDir string) (bool, error) {
	var ctr *corev1.Container
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == desired.RestoreContainerName {
			ctr = &pod.Spec.InitContainers[i]
		}
	}
	if ctr == nil {
		return true, nil
	}
	r.mu.Lock()
	next := r.restoreAfter[pod.UID]
	r.mu.Unlock()
	if time.Now().Before(next) {
		return false, nil
	}
	// The kubelet mounts the volume before any container runs.
	if err := os.MkdirAll(volumeDir, 0o700); err != nil {
		return false, err
	}
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = svcHost.ReplaceAllStringFunc(e.Value, r.ipFor)
	}
	env[restore.EnvDataDir] = volumeDir + strings.TrimPrefix(env[restore.EnvDataDir], desired.DataMountPath)
	if env[restore.EnvPVCDir] != "" {
		env[restore.EnvPVCDir] = r.claimDir(env[restore.EnvPVCClaim])
	}
	env[restore.EnvEtcdutl] = r.etcdutl
	term := filepath.Join(r.dir, "termination-"+string(pod.UID))
	env[agentenv.EnvTerminationMessagePath] = term
	var log bytes.Buffer
	code := restoreagent.Run(ctx, nil, agentrun.Lookup(env), &log)
	if code == 0 {
		return true, nil
	}
	r.t.Logf("restore of Pod %s exited %d: %s", pod.Name, code, log.String())
	msg, err := os.ReadFile(term)
	if err != nil {
		return false, fmt.Errorf("reading the restore's termination message: %w", err)
	}
	r.mu.Lock()
	r.restoreAfter[pod.UID] = time.Now().Add(restoreBackoff)
	r.mu.Unlock()
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
		Name:                 desired.RestoreContainerName,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: "Error", Message: string(msg)}},
	}}}
	return false, k8s.Status().Update(ctx, pod)
}
