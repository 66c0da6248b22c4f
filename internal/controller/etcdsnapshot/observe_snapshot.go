package etcdsnapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// observation is what one pass saw of a snapshot.
type observation struct {
	input   backup.Input
	cluster *etcdv1alpha2.EtcdCluster
}

// observe reads the cluster, the Secrets and claim the Job needs, and the Job.
func (r *SnapshotReconciler) observe(ctx context.Context, s *etcdv1alpha2.EtcdSnapshot) (*observation, error) {
	o := &observation{input: backup.Input{Phase: s.Status.Phase, Created: s.CreationTimestamp.Time, Now: r.clock.Now(), ImageSet: r.image != ""}}
	c := &etcdv1alpha2.EtcdCluster{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name}, c); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading EtcdCluster %s: %w", s.Spec.ClusterRef.Name, err)
	default:
		o.cluster = c
		o.input.ClusterFound = true
		o.input.ClusterPaused = c.Spec.Replicas != nil && *c.Spec.Replicas == 0
		o.input.AuthRequested = etcdaccess.PasswordSecretName(c) != ""
		o.input.AuthLatched = c.Status.AuthEnabled
	}
	if o.input.Phase == "" || o.input.Phase == etcdv1alpha2.SnapshotPhasePending {
		if o.cluster != nil {
			missing, err := r.missing(ctx, s, o.cluster)
			if err != nil {
				return nil, err
			}
			o.input.Missing = missing
		}
		return o, nil
	}
	state, outcome, err := r.observeJob(ctx, s)
	if err != nil {
		return nil, err
	}
	o.input.Job, o.input.Outcome = state, outcome
	return o, nil
}

// need is one Secret key or claim the Job mounts.
type need struct{ secret, key, claim string }

// needs lists what the Job of s mounts, so that a missing piece is reported by name before the
// Job would wait for it in ContainerCreating.
func needs(s *etcdv1alpha2.EtcdSnapshot, c *etcdv1alpha2.EtcdCluster) []need {
	var out []need
	if n := etcdaccess.ServerSecretName(c); n != "" {
		out = append(out, need{secret: n, key: "ca.crt"})
	}
	if n := etcdaccess.OperatorClientSecretName(c); n != "" {
		out = append(out, need{secret: n, key: corev1.TLSCertKey}, need{secret: n, key: corev1.TLSPrivateKeyKey})
	}
	if n := etcdaccess.PasswordSecretName(c); n != "" && c.Status.AuthEnabled {
		out = append(out, need{secret: n, key: corev1.BasicAuthPasswordKey})
	}
	switch d := s.Spec.Destination; {
	case d.PVC != nil:
		out = append(out, need{claim: d.PVC.ClaimName})
	case d.S3 != nil:
		out = append(out, need{secret: d.S3.CredentialsSecretRef.Name, key: agentenv.EnvAWSAccessKeyID},
			need{secret: d.S3.CredentialsSecretRef.Name, key: agentenv.EnvAWSSecretAccessKey})
		if d.S3.CASecretRef != nil {
			out = append(out, need{secret: d.S3.CASecretRef.Name, key: "ca.crt"})
		}
	}
	return out
}

// missing names the first Secret key or claim the Job needs that does not exist, with the fix.
func (r *SnapshotReconciler) missing(ctx context.Context, s *etcdv1alpha2.EtcdSnapshot, c *etcdv1alpha2.EtcdCluster) (string, error) {
	secrets := map[string]*corev1.Secret{}
	for _, n := range needs(s, c) {
		if n.claim != "" {
			err := r.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: n.claim}, &corev1.PersistentVolumeClaim{})
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("PersistentVolumeClaim %s (spec.destination.pvc.claimName) does not exist in namespace %s: create it", n.claim, s.Namespace), nil
			}
			if err != nil {
				return "", fmt.Errorf("reading PersistentVolumeClaim %s: %w", n.claim, err)
			}
			continue
		}
		sec, seen := secrets[n.secret]
		if !seen {
			sec = &corev1.Secret{}
			if err := r.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: n.secret}, sec); err != nil {
				if !apierrors.IsNotFound(err) {
					return "", fmt.Errorf("reading Secret %s: %w", n.secret, err)
				}
				sec = nil
			}
			secrets[n.secret] = sec
		}
		if sec == nil {
			return fmt.Sprintf("Secret %s does not exist in namespace %s: create it", n.secret, s.Namespace), nil
		}
		if len(sec.Data[n.key]) == 0 {
			return fmt.Sprintf("Secret %s has no key %s: add it", n.secret, n.key), nil
		}
	}
	return "", nil
}

// observeJob reads the Job, past the cache when the cache does not show it, and once it ended,
// its agent's report from the termination message of the Pod that ended it.
func (r *SnapshotReconciler) observeJob(ctx context.Context, s *etcdv1alpha2.EtcdSnapshot) (backup.JobState, backup.Outcome, error) {
	key := client.ObjectKey{Namespace: s.Namespace, Name: desired.SnapshotJobName(s.Name)}
	job := &batchv1.Job{}
	err := r.client.Get(ctx, key, job)
	if apierrors.IsNotFound(err) {
		err = r.apiReader.Get(ctx, key, job)
	}
	switch {
	case apierrors.IsNotFound(err):
		return backup.JobAbsent, backup.Outcome{}, nil
	case err != nil:
		return 0, backup.Outcome{}, fmt.Errorf("reading Job %s: %w", key.Name, err)
	}
	state := jobState(job)
	if state == backup.JobActive {
		return state, backup.Outcome{}, nil
	}
	outcome, err := r.report(ctx, job, state)
	return state, outcome, err
}

func jobState(job *batchv1.Job) backup.JobState {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return backup.JobSucceeded
		case batchv1.JobFailed:
			return backup.JobFailed
		}
	}
	return backup.JobActive
}

// report reads the agent's result from the Job's Pods: the one that succeeded, or the newest
// that failed. The Pods are read past the cache, which holds member Pods only.
func (r *SnapshotReconciler) report(ctx context.Context, job *batchv1.Job, state backup.JobState) (backup.Outcome, error) {
	var pods corev1.PodList
	if err := r.apiReader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return backup.Outcome{}, fmt.Errorf("listing the Pods of Job %s: %w", job.Name, err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	for _, p := range pods.Items {
		if state == backup.JobSucceeded && p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		msg := terminationMessage(&p)
		if msg == "" {
			continue
		}
		res, err := snapshot.ParseTerminationMessage([]byte(msg))
		if err != nil {
			return backup.Outcome{Reason: backup.ReasonJobFailed, Message: fmt.Sprintf("Pod %s reported %q, which is no snapshot result: %v", p.Name, msg, err)}, nil
		}
		return outcomeOf(res), nil
	}
	return backup.Outcome{}, nil
}

func terminationMessage(p *corev1.Pod) string {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == desired.SnapshotAgentContainer && st.State.Terminated != nil {
			return strings.TrimSpace(st.State.Terminated.Message)
		}
	}
	return ""
}

// outcomeOf turns the agent's result into the planner's terms.
func outcomeOf(res snapshot.Result) backup.Outcome {
	if res.Failed() {
		return backup.Outcome{Reason: string(res.Reason), Message: res.Message}
	}
	return backup.Outcome{Artifact: &etcdv1alpha2.SnapshotArtifact{URI: res.URI, SizeBytes: res.SizeBytes, Checksum: res.Checksum,
		Revision: res.Revision, EtcdVersion: res.EtcdVersion},
		Pruning: backup.Pruning{Pruned: res.Pruned, Count: res.PrunedCount, Error: res.PruneError}}
}
