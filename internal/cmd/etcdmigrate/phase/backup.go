package phase

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// BackupPoll is how often the backup Job is read.
const BackupPoll = 5 * time.Second

// BackupConfig is the backup phase's part of the command line.
type BackupConfig struct {
	// Image is the snapshot agent's image: --agent-image, else the new operator's.
	Image string
	// Destination is where the artifact goes (--backup-s3-* or --backup-pvc-*).
	Destination etcdv1alpha2.SnapshotLocation
	// Timeout bounds one cluster's backup (--backup-timeout).
	Timeout time.Duration
	// Poll is the Job's polling interval; BackupPoll when zero.
	Poll time.Duration
}

// BackupResult is the stored artifact.
type BackupResult struct {
	URI, Checksum string
	Revision      int64
}

// BackupJobName is the backup Job of a legacy cluster (the plan's name for it).
func BackupJobName(cluster string) string { return cluster + "-migrate-backup" }

// BackupJob renders the backup Job with the operator's own snapshot Job renderer, so that the
// backup runs the same agent, flags and security context as an EtcdSnapshot
// (docs/backup-restore.md, "The snapshot Job"). No EtcdSnapshot can stand behind it (there is no
// EtcdCluster yet), so the Job gets its own name and its endpoint is the legacy client Service.
func BackupJob(c *legacy.EtcdCluster, cfg BackupConfig, now time.Time) *batchv1.Job {
	name := c.Name + "-premigrate-" + now.UTC().Format("20060102-150405")
	snap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, UID: types.UID("etcd-migrate-" + name)},
		Spec:       etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: c.Name}, Destination: cfg.Destination},
	}
	in := desired.SnapshotJobInput{
		Snapshot: snap, Image: cfg.Image,
		Cluster: &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace}},
	}
	scheme := "http"
	if t := c.TLS(); t.ServerSecret != "" {
		scheme = "https"
		in.CASecret = t.ServerTrustedCASecret
		if in.CASecret == "" {
			in.CASecret = t.ServerSecret
		}
		in.ClientSecret = t.ClientSecret
	}
	job := desired.SnapshotJob(in)
	job.Name = BackupJobName(c.Name)
	env := job.Spec.Template.Spec.Containers[0].Env
	for i := range env {
		if env[i].Name == snapshot.EnvEndpoints {
			env[i].Value = fmt.Sprintf("%s://%s.%s.svc:%d", scheme, legacy.ClientServiceName(c), c.Namespace, legacy.ClientPort)
		}
	}
	return job
}

// Backup runs the backup Job of one cluster and waits for its result. A Job that succeeded
// already is reused (a re-run does not back up twice); one that failed is replaced.
func Backup(ctx context.Context, kube client.Client, clk clock.Clock, c *legacy.EtcdCluster, cfg BackupConfig) (*BackupResult, error) {
	key := client.ObjectKey{Namespace: c.Namespace, Name: BackupJobName(c.Name)}
	job := &batchv1.Job{}
	err := kube.Get(ctx, key, job)
	switch {
	case apierrors.IsNotFound(err):
		job = BackupJob(c, cfg, clk.Now())
		if err := kube.Create(ctx, job); err != nil {
			return nil, fmt.Errorf("creating the backup Job %s: %w", key.Name, err)
		}
	case err != nil:
		return nil, fmt.Errorf("reading the backup Job %s: %w", key.Name, err)
	case jobFinished(job) == batchv1.JobFailed:
		if err := kube.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting the failed backup Job %s: %w", key.Name, err)
		}
		return nil, fmt.Errorf("an earlier backup Job %s failed; it was deleted, re-run to try again", key.Name)
	}
	return waitBackup(ctx, kube, key, cfg)
}

func waitBackup(ctx context.Context, kube client.Client, key client.ObjectKey, cfg BackupConfig) (*BackupResult, error) {
	poll := cfg.Poll
	if poll == 0 {
		poll = BackupPoll
	}
	var state batchv1.JobConditionType
	err := wait.PollUntilContextTimeout(ctx, poll, cfg.Timeout, true, func(ctx context.Context) (bool, error) {
		job := &batchv1.Job{}
		if err := kube.Get(ctx, key, job); err != nil {
			return false, err
		}
		state = jobFinished(job)
		return state != "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("backup Job %s did not finish within --backup-timeout %s: %w", key.Name, cfg.Timeout, err)
	}
	res, err := agentResult(ctx, kube, key)
	if err != nil {
		return nil, err
	}
	if state == batchv1.JobFailed || res.Failed() {
		return nil, fmt.Errorf("backup Job %s failed: %s %s", key.Name, res.Reason, res.Message)
	}
	return &BackupResult{URI: res.URI, Checksum: res.Checksum, Revision: res.Revision}, nil
}

func jobFinished(job *batchv1.Job) batchv1.JobConditionType {
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return c.Type
		}
	}
	return ""
}

// agentResult reads the agent's report from the termination message of the newest Pod of the
// Job that ended (as the EtcdSnapshot controller does).
func agentResult(ctx context.Context, kube client.Client, key client.ObjectKey) (snapshot.Result, error) {
	var pods corev1.PodList
	if err := kube.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels{batchv1.JobNameLabel: key.Name}); err != nil {
		return snapshot.Result{}, fmt.Errorf("listing the Pods of Job %s: %w", key.Name, err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	for _, p := range pods.Items {
		for _, st := range p.Status.ContainerStatuses {
			if st.Name != desired.SnapshotAgentContainer || st.State.Terminated == nil {
				continue
			}
			msg := strings.TrimSpace(st.State.Terminated.Message)
			if msg == "" {
				continue
			}
			return snapshot.ParseTerminationMessage([]byte(msg))
		}
	}
	return snapshot.Result{}, fmt.Errorf("no Pod of Job %s reported a snapshot result", key.Name)
}
