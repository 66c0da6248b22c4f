package desired

import (
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

// The restore of a new cluster's seed (docs/backup-restore.md, "Restore"): two init containers
// ahead of etcd. install-tools copies the operator's binary from the operator's image into an
// emptyDir; restore runs that binary's restore agent in the target etcd image, whose etcdutl is
// of exactly the version that will open the data.
const (
	// RestoreToolsContainerName is the init container that installs the restore agent.
	RestoreToolsContainerName = "install-tools"
	// RestoreContainerName is the init container that restores the data dir.
	RestoreContainerName = "restore"
	// OperatorBinaryInImage is the operator's executable in its image.
	OperatorBinaryInImage = "/etcd-operator"
	// EtcdutlBinary is etcdutl in the official etcd images (3.5 and later), next to etcd.
	EtcdutlBinary = "/usr/local/bin/etcdutl"

	restoreToolsVolumeName = "restore-tools"
	restoreToolsMountPath  = "/opt/etcd-restore"
	restoreAgentBinary     = restoreToolsMountPath + "/etcd-operator"
	// restoreSourceVolumeName is the claim a PVC snapshot is read from, mounted read-only.
	restoreSourceVolumeName = "restore-source"
	restoreSourceMountPath  = "/var/run/etcd-restore/source"
	restoreSecretsMountRoot = "/etc/etcd-restore" //nolint:gosec // G101: a mount path, not a credential
)

// restoreToolsVolumeSize bounds the tools emptyDir: the operator binary is well below it.
var restoreToolsVolumeSize = resource.MustParse("256Mi")

// Restores reports whether a member's Pod restores its data dir from a snapshot before etcd
// starts: only the seed, only with spec.restore, and only while it may still found the cluster
// (State new: the cluster has no cluster ID and etcd never reported the seed's member ID). Once
// the cluster formed, the seed's Pod is built without the restore, so a seed whose volume later
// comes back empty is never restored again under the identity the cluster already has: the
// data-dir guard refuses it as DataLost instead (docs/design/pod-template.md, "Restore").
func Restores(member *etcdv1alpha2.EtcdMember, in Inputs) bool {
	return member.Spec.Bootstrap && member.Spec.Restore != nil && renderState(in.State) == ClusterStateNew
}

// restoreInitContainers are install-tools and restore, in that order. The tools come from the
// operator's image, in.GuardImage: the controller builds no restoring Pod without one.
func restoreInitContainers(member *etcdv1alpha2.EtcdMember, in Inputs, etcdImage string) ([]corev1.Container, []corev1.Volume) {
	tools := corev1.Container{
		Name:            RestoreToolsContainerName,
		Image:           in.GuardImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{OperatorBinaryInImage, restore.Command, restore.CommandInstall, restoreAgentBinary},
		VolumeMounts:    []corev1.VolumeMount{{Name: restoreToolsVolumeName, MountPath: restoreToolsMountPath}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          containerSecurityContext(),
	}
	m := &restoreMounts{}
	m.add(corev1.VolumeMount{Name: DataVolumeName, MountPath: DataMountPath})
	m.add(corev1.VolumeMount{Name: restoreToolsVolumeName, MountPath: restoreToolsMountPath, ReadOnly: true})
	m.restoreEnv(member)
	m.source(member.Spec.Restore.Source)
	agent := corev1.Container{
		Name:            RestoreContainerName,
		Image:           etcdImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{restoreAgentBinary, restore.Command},
		Env:             m.envs,
		VolumeMounts:    m.mounts,
		// etcdutl loads the database as etcd will: the etcd container's resources fit it, and
		// init containers cost the Pod no more than the largest of them.
		Resources:                EffectiveResources(member.Spec.Resources),
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          containerSecurityContext(),
	}
	volumes := append([]corev1.Volume{{Name: restoreToolsVolumeName, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(restoreToolsVolumeSize)}}}}, m.volumes...)
	return []corev1.Container{tools, agent}, volumes
}

// restoreMounts collects the restore container's environment and the volumes behind its files.
type restoreMounts struct {
	envs    []corev1.EnvVar
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
}

func (m *restoreMounts) env(name, value string) {
	if value != "" {
		m.envs = append(m.envs, corev1.EnvVar{Name: name, Value: value})
	}
}

func (m *restoreMounts) add(mount corev1.VolumeMount) { m.mounts = append(m.mounts, mount) }

// restoreEnv is the seed's identity, exactly as its etcd flags render it (flags.go), so that
// the membership etcdutl writes is the one etcd starts with.
func (m *restoreMounts) restoreEnv(member *etcdv1alpha2.EtcdMember) {
	m.env(restore.EnvDataDir, DataDir(member.Annotations[etcdv1alpha2.AnnotationDataDirSubPath]))
	m.env(restore.EnvName, member.Name)
	m.env(restore.EnvInitialCluster, member.Spec.InitialCluster)
	m.env(restore.EnvClusterToken, member.Spec.ClusterToken)
	m.env(restore.EnvPeerURL, PeerURL(member))
	m.env(restore.EnvEtcdVersion, member.Spec.Version)
	m.env(restore.EnvEtcdutl, EtcdutlBinary)
	m.env(restore.EnvChecksum, member.Spec.Restore.Checksum)
}

// source mounts where the snapshot comes from: the claim read-only, or only the S3 Secret keys
// the agent reads, each projected alone, so that a Secret's other keys never reach the Pod.
func (m *restoreMounts) source(src etcdv1alpha2.SnapshotLocation) {
	switch {
	case src.PVC != nil:
		m.env(restore.EnvSource, restore.SourcePVC)
		m.env(restore.EnvPVCDir, restoreSourceMountPath)
		m.env(restore.EnvPVCClaim, src.PVC.ClaimName)
		m.env(restore.EnvPVCPath, src.PVC.SubPath)
		m.volumes = append(m.volumes, corev1.Volume{Name: restoreSourceVolumeName, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.PVC.ClaimName, ReadOnly: true}}})
		m.add(corev1.VolumeMount{Name: restoreSourceVolumeName, MountPath: restoreSourceMountPath, ReadOnly: true})
	case src.S3 != nil:
		s3 := src.S3
		m.env(restore.EnvSource, restore.SourceS3)
		m.env(restore.EnvS3Endpoint, s3.Endpoint)
		m.env(restore.EnvS3Bucket, s3.Bucket)
		m.env(restore.EnvS3Key, s3.Key)
		m.env(restore.EnvS3Region, s3.Region)
		m.env(restore.EnvS3ForcePathStyle, strconv.FormatBool(s3.ForcePathStyle))
		m.secret("restore-s3-credentials", s3.CredentialsSecretRef.Name, agentenv.EnvAWSAccessKeyID)
		creds := m.secret("restore-s3-credentials", s3.CredentialsSecretRef.Name, agentenv.EnvAWSSecretAccessKey)
		m.env(restore.EnvS3CredentialsDir, path.Dir(creds))
		if s3.CASecretRef != nil {
			m.env(restore.EnvS3CAFile, m.secret("restore-s3-ca", s3.CASecretRef.Name, tlsCAKey))
		}
	}
}

// secret mounts key of Secret secretName under volume, read-only, and returns the file's path.
func (m *restoreMounts) secret(volume, secretName, key string) string {
	dir := path.Join(restoreSecretsMountRoot, volume)
	for i := range m.volumes {
		if m.volumes[i].Name == volume {
			src := m.volumes[i].Secret
			src.Items = append(src.Items, corev1.KeyToPath{Key: key, Path: key})
			return path.Join(dir, key)
		}
	}
	m.volumes = append(m.volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secretName, DefaultMode: ptr.To(tlsSecretMode), Items: []corev1.KeyToPath{{Key: key, Path: key}}}}})
	m.add(corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
	return path.Join(dir, key)
}
