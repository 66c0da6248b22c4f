package desired

import (
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/guard"
)

// The data-dir guard (internal/guard) in a PVC member's Pod: an init container copies it from the
// operator's image into a small emptyDir, and the etcd container runs etcd under it.
const (
	// GuardBinaryInImage is where the operator's image holds the guard.
	GuardBinaryInImage = "/etcd-guard"
	// GuardContainerName is the init container that installs the guard.
	GuardContainerName = "install-etcd-guard"
	// GuardVolumeName is the emptyDir that holds the guard binary: written by the init
	// container, mounted read-only where etcd runs. It lives as long as the Pod, across restarts
	// of the etcd container, so a writable mount would let whatever runs in that container
	// replace the program its later restarts run (docs/operator.md, "Permissions").
	GuardVolumeName = "etcd-guard"
	// GuardMountPath is where GuardVolumeName is mounted in both containers.
	GuardMountPath = "/opt/etcd-operator"
	// GuardBinary is the installed guard.
	GuardBinary = GuardMountPath + "/etcd-guard"
	// GuardStateVolumeName is the emptyDir, writable in the etcd container, that holds only the
	// guard's marker; nothing on it is ever executed.
	GuardStateVolumeName = "etcd-guard-state"
	// GuardStateMountPath is where GuardStateVolumeName is mounted in the etcd container.
	GuardStateMountPath = "/var/run/etcd-guard"
	// GuardMarker records that this Pod has seen the data dir hold data.
	GuardMarker = GuardStateMountPath + "/data-seen"
	// GuardForcedMarker records the force-new-cluster request a start of etcd was forced for,
	// so that the flag is used once (docs/design/quorum-recovery.md).
	GuardForcedMarker = GuardStateMountPath + "/force-new-cluster-done"
	// GuardPodInfoVolumeName projects the Pod's force-new-cluster annotation into a file the
	// guard reads; the kubelet updates it in place when the annotation changes.
	GuardPodInfoVolumeName = "etcd-guard-podinfo"
	// GuardPodInfoMountPath is where GuardPodInfoVolumeName is mounted, read-only.
	GuardPodInfoMountPath = "/etc/etcd-guard"
	// GuardForceFile is the projected annotation.
	GuardForceFile = GuardPodInfoMountPath + "/force-new-cluster"
	// GuardPort serves the read-only log tail quorum-loss recovery reads.
	GuardPort int32 = 2382
	// GuardPortName names GuardPort on the etcd container.
	GuardPortName = "guard"
)

// guardVolumeSize bounds the binary's emptyDir: the guard is a small static binary;
// guardStateVolumeSize bounds the marker's.
var (
	guardVolumeSize      = resource.MustParse("32Mi")
	guardStateVolumeSize = resource.MustParse("1Mi")
)

// Guarded reports whether a member's Pod runs etcd under the data-dir guard: every member, when the
// operator knows the guard's image. A PVC member needs it to notice data lost behind its back; every
// member needs it for quorum-loss recovery, which reads the log tail and restarts etcd with
// --force-new-cluster inside the running Pod (docs/design/quorum-recovery.md): a Memory member's
// data lives exactly as long as its Pod, so recreating the Pod is never an option.
func Guarded(member *etcdv1alpha2.EtcdMember, in Inputs) bool {
	return guardedSpec(&member.Spec, in.GuardImage)
}

// guardedSpec is Guarded for a member template; the template hash uses it too, so that the
// guard image enters exactly the hashes of the Pods that run the guard.
func guardedSpec(_ *etcdv1alpha2.EtcdMemberSpec, guardImage string) bool {
	return guardImage != ""
}

// DataExpected reports whether the member has run with its data dir before, as far as the
// operator can tell when it builds a Pod: etcd reported a version for it (it answered Status, so
// it had started on its data dir) or it is a voter (promoted, or the seed after it formed the
// cluster). A new joiner's or the seed's first Pod expects nothing; the guard then protects the
// data from the moment that Pod's etcd writes it.
func DataExpected(member *etcdv1alpha2.EtcdMember) bool {
	return member.Status.MemberID != "" && (member.Status.Version != "" || member.Status.IsVoter)
}

// guardInitContainer copies the guard into the shared volume. It runs the operator's image with
// the etcd container's restrictions.
func guardInitContainer(image string) corev1.Container {
	return corev1.Container{
		Name:            GuardContainerName,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{GuardBinaryInImage, guard.CommandInstall, GuardBinary},
		VolumeMounts:    []corev1.VolumeMount{{Name: GuardVolumeName, MountPath: GuardMountPath}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("16Mi"),
			},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          containerSecurityContext(),
	}
}

// guardVolumes are the guard binary's emptyDir, its markers', and the projected annotation.
func guardVolumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: GuardVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(guardVolumeSize)}}},
		{Name: GuardStateVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(guardStateVolumeSize)}}},
		{Name: GuardPodInfoVolumeName, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			DefaultMode: ptr.To(tlsSecretMode),
			Items: []corev1.DownwardAPIVolumeFile{{
				Path:     "force-new-cluster",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['" + etcdv1alpha2.AnnotationForceNewCluster + "']"},
			}},
		}}},
	}
}

// guardMounts are the etcd container's mounts of the guard's volumes: the binary read-only, the
// marker writable.
func guardMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: GuardVolumeName, MountPath: GuardMountPath, ReadOnly: true},
		{Name: GuardStateVolumeName, MountPath: GuardStateMountPath},
		{Name: GuardPodInfoVolumeName, MountPath: GuardPodInfoMountPath, ReadOnly: true},
	}
}

// AwaitsMembership reports whether the guard should hold the member's etcd until a peer lists
// it: a member joining an existing cluster for which no etcd member ID was ever recorded may have
// been staged, its Pod built before its add (docs/design/membership-flows.md, "Staged joins").
// The guard waits only on an empty data dir, so a member already added, or one with data, starts
// at once.
func AwaitsMembership(member *etcdv1alpha2.EtcdMember, state ClusterState) bool {
	return renderState(state) == ClusterStateExisting && !member.Spec.Bootstrap && member.Status.MemberID == ""
}

// guardCommand is the etcd container's command under the guard; etcd's flags follow as Args.
func guardCommand(dataDir string, dataExpected, awaitMembership bool) []string {
	cmd := []string{GuardBinary, guard.CommandRun,
		"--" + guard.FlagDataDir + "=" + dataDir,
		"--" + guard.FlagMarker + "=" + GuardMarker,
		"--" + guard.FlagTerminationLog + "=" + corev1.TerminationMessagePathDefault,
		"--" + guard.FlagRecoveryListen + "=" + net.JoinHostPort("", strconv.Itoa(int(GuardPort))),
		"--" + guard.FlagForceFile + "=" + GuardForceFile,
		"--" + guard.FlagForcedMarker + "=" + GuardForcedMarker,
	}
	if dataExpected {
		cmd = append(cmd, "--"+guard.FlagDataExpected)
	}
	if awaitMembership {
		cmd = append(cmd, "--"+guard.FlagAwaitMembership)
	}
	return append(cmd, "--", EtcdBinary)
}
