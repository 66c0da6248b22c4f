package desired

import (
	"path"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// The snapshot Job's shape (docs/backup-restore.md, "The snapshot Job").
const (
	// SnapshotAgentContainer is the agent's container, which runs the operator's own image.
	SnapshotAgentContainer = "snapshot-agent"
	// SnapshotAgentBinaryInImage is where the operator's image holds the agent built on its
	// own (cmd/etcd-snapshot-agent): it starts with about 25 MiB fewer resident pages than the
	// operator's binary, whose `snapshot-agent` subcommand runs the same code
	// (docs/backup-restore.md, "Performance").
	SnapshotAgentBinaryInImage = "/etcd-snapshot-agent"
	// snapshotBackoffLimit lets a transient failure (a leader change, a store hiccup) be retried
	// three times; a permanent one ends the Job at once through the pod failure policy.
	snapshotBackoffLimit = 3
	// snapshotActiveDeadline is longer than the agent's own timeout (snapshot.DefaultTimeout),
	// so that the agent, not the kubelet, ends a slow run and reports why.
	snapshotActiveDeadline = 30 * 60
	// snapshotTTLAfterFinished keeps a finished Job, and its Pods' logs, for a day. The
	// controller reads the result within seconds; the day covers an operator that was down when
	// the Job finished, which would otherwise find it gone and call the snapshot lost.
	snapshotTTLAfterFinished = 24 * 60 * 60

	snapshotMountRoot   = "/etc/etcd-snapshot"
	snapshotBackupMount = "/backup"
)

// SnapshotJobInput is what a snapshot Job is rendered from. The Secret names come from the
// cluster's spec (internal/etcdaccess); an empty name means that part is not needed.
type SnapshotJobInput struct {
	Snapshot *etcdv1alpha2.EtcdSnapshot
	Cluster  *etcdv1alpha2.EtcdCluster
	// Image is the operator's own image.
	Image string
	// CASecret holds ca.crt that verifies the members (the server Secret); ClientSecret the
	// operator's client certificate; PasswordSecret root's password, set only once the
	// cluster's auth is latched.
	CASecret, ClientSecret, PasswordSecret string
	// ScheduleName and ScheduleUID name the EtcdSnapshotSchedule the snapshot belongs to
	// (backup.OwningSchedule); empty for a one-off snapshot. The agent records the UID with the
	// artifact, so that the schedule's retention may prune it later.
	ScheduleName string
	ScheduleUID  types.UID
	// Retention is that schedule's spec.retention and RetentionTimeZone its spec.timeZone; nil
	// when it keeps every file.
	Retention         *etcdv1alpha2.SnapshotRetention
	RetentionTimeZone string
}

// SnapshotJobName is the Job of snapshot name.
func SnapshotJobName(snapshot string) string { return snapshot + "-snapshot" }

// SnapshotJobLabels are the labels of a snapshot Job and its Pods: never the cluster label or
// app.kubernetes.io/name=etcd, which the Services, the PDB and status.selector select on.
func SnapshotJobLabels(snapshotName, cluster string) map[string]string {
	return map[string]string{
		etcdv1alpha2.LabelName:        etcdv1alpha2.NameSnapshotAgent,
		etcdv1alpha2.LabelInstance:    cluster,
		etcdv1alpha2.LabelManagedBy:   etcdv1alpha2.ManagedByOperator,
		etcdv1alpha2.LabelSnapshot:    snapshotName,
		etcdv1alpha2.LabelSnapshotFor: cluster,
	}
}

// SnapshotJob renders the Job that runs the snapshot agent for in.Snapshot.
func SnapshotJob(in SnapshotJobInput) *batchv1.Job {
	s, c := in.Snapshot, in.Cluster
	labels := SnapshotJobLabels(s.Name, c.Name)
	env, volumes, mounts := snapshotAgentEnv(in)
	pod := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		AutomountServiceAccountToken:  ptr.To(false),
		SecurityContext:               PodSecurityContext(nil),
		ImagePullSecrets:              append([]corev1.LocalObjectReference(nil), c.Spec.ImagePullSecrets...),
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		Volumes:                       volumes,
		Containers: []corev1.Container{{
			Name:                     SnapshotAgentContainer,
			Image:                    in.Image,
			Command:                  []string{SnapshotAgentBinaryInImage},
			Env:                      env,
			VolumeMounts:             mounts,
			SecurityContext:          containerSecurityContext(),
			TerminationMessagePath:   agentenv.DefaultTerminationMessagePath,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
		}},
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: SnapshotJobName(s.Name), Namespace: s.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](snapshotBackoffLimit),
			ActiveDeadlineSeconds:   ptr.To[int64](snapshotActiveDeadline),
			TTLSecondsAfterFinished: ptr.To[int32](snapshotTTLAfterFinished),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To(SnapshotAgentContainer),
					Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{snapshot.ExitPermanent}},
			}}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
}

// snapshotAgentEnv is the agent's environment (the names internal/snapshot parses) and the
// volumes its files come from.
func snapshotAgentEnv(in SnapshotJobInput) ([]corev1.EnvVar, []corev1.Volume, []corev1.VolumeMount) {
	s, c := in.Snapshot, in.Cluster
	scheme := "http"
	if in.CASecret != "" {
		scheme = "https"
	}
	m := &jobMounts{}
	m.env(snapshot.EnvEndpoints, scheme+"://"+ClientServiceName(c.Name)+"."+c.Namespace+".svc:"+port(ClientPort))
	m.env(snapshot.EnvSnapshotName, s.Name)
	m.env(snapshot.EnvSnapshotUID, string(s.UID))
	if in.ScheduleName != "" {
		m.env(snapshot.EnvScheduleName, in.ScheduleName)
		m.env(snapshot.EnvScheduleUID, string(in.ScheduleUID))
		if r := in.Retention; r != nil {
			m.env(snapshot.EnvRetentionKeepLast, retentionCount(r.KeepLast))
			m.env(snapshot.EnvRetentionKeepDaily, retentionCount(r.KeepDaily))
			m.env(snapshot.EnvRetentionKeepWeekly, retentionCount(r.KeepWeekly))
			m.env(snapshot.EnvRetentionTimeZone, in.RetentionTimeZone)
		}
	}
	if in.CASecret != "" {
		m.env(snapshot.EnvCAFile, m.secret("etcd-ca", in.CASecret, "ca.crt"))
	}
	if in.ClientSecret != "" {
		m.env(snapshot.EnvCertFile, m.secret("etcd-client", in.ClientSecret, corev1.TLSCertKey))
		m.env(snapshot.EnvKeyFile, m.secret("etcd-client", in.ClientSecret, corev1.TLSPrivateKeyKey))
	}
	if in.PasswordSecret != "" {
		m.env(snapshot.EnvUsername, "root")
		m.env(snapshot.EnvPasswordFile, m.secret("etcd-root", in.PasswordSecret, corev1.BasicAuthPasswordKey))
	}
	switch d := s.Spec.Destination; {
	case d.PVC != nil:
		m.env(snapshot.EnvDestination, snapshot.DestinationPVC)
		m.env(snapshot.EnvPVCDir, snapshotBackupMount)
		m.env(snapshot.EnvPVCClaim, d.PVC.ClaimName)
		m.env(snapshot.EnvPVCSubPath, d.PVC.SubPath)
		m.volumes = append(m.volumes, corev1.Volume{Name: "backup", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.PVC.ClaimName}}})
		m.mounts = append(m.mounts, corev1.VolumeMount{Name: "backup", MountPath: snapshotBackupMount})
	case d.S3 != nil:
		m.env(snapshot.EnvDestination, snapshot.DestinationS3)
		m.env(snapshot.EnvS3Endpoint, d.S3.Endpoint)
		m.env(snapshot.EnvS3Bucket, d.S3.Bucket)
		m.env(snapshot.EnvS3Key, d.S3.Key)
		m.env(snapshot.EnvS3Region, d.S3.Region)
		m.env(snapshot.EnvS3ForcePathStyle, strconv.FormatBool(d.S3.ForcePathStyle))
		creds := m.secret("s3-credentials", d.S3.CredentialsSecretRef.Name, agentenv.EnvAWSAccessKeyID)
		m.secret("s3-credentials", d.S3.CredentialsSecretRef.Name, agentenv.EnvAWSSecretAccessKey)
		m.env(snapshot.EnvS3CredentialsDir, path.Dir(creds))
		if d.S3.CASecretRef != nil {
			m.env(snapshot.EnvS3CAFile, m.secret("s3-ca", d.S3.CASecretRef.Name, "ca.crt"))
		}
	}
	return m.envs, m.volumes, m.mounts
}

// retentionCount renders one of spec.retention's counts; "" (no variable) when unset.
func retentionCount(n *int32) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(int(*n))
}

// jobMounts collects the agent's environment and the Secret volumes behind its files.
type jobMounts struct {
	envs    []corev1.EnvVar
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
}

func (m *jobMounts) env(name, value string) {
	if value != "" {
		m.envs = append(m.envs, corev1.EnvVar{Name: name, Value: value})
	}
}

// secret mounts key of Secret secretName under volume and returns the file's path. Keys of one
// volume share its mount; only the keys asked for are projected, so a Secret's other keys (a
// CA's private key, say) never reach the agent.
func (m *jobMounts) secret(volume, secretName, key string) string {
	dir := path.Join(snapshotMountRoot, volume)
	for i := range m.volumes {
		if m.volumes[i].Name == volume {
			src := m.volumes[i].Secret
			src.Items = append(src.Items, corev1.KeyToPath{Key: key, Path: key})
			return path.Join(dir, key)
		}
	}
	m.volumes = append(m.volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secretName, DefaultMode: ptr.To(tlsSecretMode), Items: []corev1.KeyToPath{{Key: key, Path: key}}}}})
	m.mounts = append(m.mounts, corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
	return path.Join(dir, key)
}
