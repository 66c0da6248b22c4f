package agentrun

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// FinishSnapshotJob ends a snapshot agent's Job as the Job controller and the kubelet would
// (envtest runs neither): one Pod of the Job whose agent container terminated with res as its
// termination message, and the Job Complete, or Failed when res failed.
func FinishSnapshotJob(ctx context.Context, c client.Client, job *batchv1.Job, res snapshot.Result) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-0", Labels: map[string]string{batchv1.JobNameLabel: job.Name}},
		Spec: *job.Spec.Template.Spec.DeepCopy()}
	if err := c.Create(ctx, pod); err != nil {
		return err
	}
	phase, exit := corev1.PodSucceeded, int32(snapshot.ExitOK)
	if res.Failed() {
		phase, exit = corev1.PodFailed, int32(res.Reason.ExitCode())
	}
	pod.Status.Phase = phase
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: desired.SnapshotAgentContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: exit, Message: string(snapshot.EncodeTerminationMessage(res))}}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		return err
	}
	now := metav1.Now()
	job.Status.StartTime = &now
	if res.Failed() {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "PodFailurePolicy", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "PodFailurePolicy", LastTransitionTime: now}}
	} else {
		job.Status.Succeeded, job.Status.CompletionTime = 1, &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now}}
	}
	return c.Status().Update(ctx, job)
}
