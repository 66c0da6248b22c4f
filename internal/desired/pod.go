package desired

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// Inputs are the facts outside an EtcdMember that its Pod depends on. Controllers gather them
// (reading the parent, the Secrets and the operator's flags) and pass them in, so that Pod itself
// stays a pure function.
type Inputs struct {
	// ImageRepository is the operator's --etcd-image-repository; empty means
	// DefaultImageRepository.
	ImageRepository string
	// State is the member's --initial-cluster-state, from InitialClusterState. A caller that
	// got an error from InitialClusterState must not build a Pod at all.
	State ClusterState
	// CADigests are the digests of the mounted CA bundles, for the template hash.
	CADigests CADigests
	// GuardImage is the operator's own image, which holds the data-dir guard and the restore
	// agent; empty leaves members unguarded (an operator running outside a Pod, as in
	// development), and a seed that Restores cannot be built without it.
	GuardImage string
}

// terminationGracePeriodSeconds gives etcd time to hand leadership to a follower on SIGTERM
// (etcd transfers leadership before stopping, bounded by its election timeout) and to close its
// backend cleanly.
const terminationGracePeriodSeconds int64 = 30

// Default container requests when spec.resources is empty: enough for a small cluster to be
// scheduled with a guaranteed share, with no limits, because etcd's memory grows with its
// keyspace and an OOM kill is worse than a noisy neighbour.
var (
	defaultCPURequest    = resource.MustParse("100m")
	defaultMemoryRequest = resource.MustParse("128Mi")
)

// antiAffinityWeight is the weight of the default anti-affinity: the maximum, so the scheduler
// spreads members across nodes whenever it can, while still placing them when it cannot (a
// single-node cluster, a drain of all but one node).
const antiAffinityWeight int32 = 100

// Pod builds a member's Pod (docs/design/pod-template.md). It is named after the member, owned by
// it, and annotated with the template hash it was built from; the member controller compares that
// hash with the one the cluster controller authorised to decide whether to recreate the Pod.
//
// Callers build a Pod only for a member whose spec.initialCluster is set (an empty one means
// the member has not been added to etcd yet) and only with a State from InitialClusterState that
// did not fail. The returned Pod shares no memory with member.
func Pod(member *etcdv1alpha2.EtcdMember, in Inputs) *corev1.Pod {
	spec := &member.Spec
	image := Image(in.ImageRepository, spec.Version)

	annotations := map[string]string{
		etcdv1alpha2.AnnotationTemplateHash: TemplateHash(spec, Images{Etcd: image, Guard: in.GuardImage}, in.CADigests),
	}

	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            member.Name,
			Namespace:       member.Namespace,
			Labels:          MemberPodLabels(member),
			Annotations:     mergeMetadata(additionalAnnotations(spec.AdditionalMetadata), annotations),
			OwnerReferences: []metav1.OwnerReference{memberOwnerRef(member)},
		},
		Spec: corev1.PodSpec{
			// hostname + subdomain give the Pod the DNS name etcd advertises,
			// <member>.<service>.<namespace>.svc, through the headless Service.
			Hostname:    member.Name,
			Subdomain:   MemberServiceName(member),
			HostAliases: selfAlias(member),
			Containers:  []corev1.Container{etcdContainer(member, in, image)},
			Volumes:     volumes(member),

			SecurityContext: PodSecurityContext(spec.PodSecurityContext),
			// etcd never talks to the Kubernetes API.
			AutomountServiceAccountToken: ptr.To(false),
			// Service links inject variables such as ETCD_CLIENT_PORT for a Service named
			// "etcd-client"; etcd reads every ETCD_* variable as a flag and refuses to start
			// on unknown ones.
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(terminationGracePeriodSeconds),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			ImagePullSecrets:              append([]corev1.LocalObjectReference(nil), spec.ImagePullSecrets...),

			Affinity:                  EffectiveAffinity(spec.Affinity, spec.ClusterName),
			TopologySpreadConstraints: copyTopologySpreadConstraints(spec.TopologySpreadConstraints),
			NodeSelector:              copyMap(spec.NodeSelector),
			Tolerations:               copyTolerations(spec.Tolerations),
			PriorityClassName:         spec.PriorityClassName,
		},
	}
	if Guarded(member, in) {
		// The guard image is part of the template hash (TemplateHash), so a new operator
		// image reaches running PVC members, and members built before the guard existed get
		// it, through a gated roll rather than whenever their Pods happen to be recreated.
		pod.Spec.InitContainers = []corev1.Container{guardInitContainer(in.GuardImage)}
		pod.Spec.Volumes = append(pod.Spec.Volumes, guardVolumes()...)
		etcd := &pod.Spec.Containers[0]
		// Memory members are never staged (docs/design/membership-flows.md, "Staged joins").
		await := AwaitsMembership(member, in.State) && member.Spec.Storage.Medium != etcdv1alpha2.StorageMediumMemory
		etcd.Command = guardCommand(DataDir(member.Annotations[etcdv1alpha2.AnnotationDataDirSubPath]), DataExpected(member), await)
		etcd.VolumeMounts = append(etcd.VolumeMounts, guardMounts()...)
		etcd.Ports = append(etcd.Ports, corev1.ContainerPort{Name: GuardPortName, ContainerPort: GuardPort, Protocol: corev1.ProtocolTCP})
	}
	if Restores(member, in) {
		// Not part of the template hash: the restore runs once, before the cluster forms, and
		// the seed's later Pods differ from its first only by it (docs/design/pod-template.md).
		containers, vols := restoreInitContainers(member, in, image)
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, containers...)
		pod.Spec.Volumes = append(pod.Spec.Volumes, vols...)
	}
	return pod
}

// etcdContainer is the single container of a member Pod.
func etcdContainer(member *etcdv1alpha2.EtcdMember, in Inputs, image string) corev1.Container {
	startup, liveness, readiness := probes(versionOrNewest(member.Spec.Version))
	return corev1.Container{
		Name:            ContainerName,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{EtcdBinary},
		Args:            EtcdFlags(MemberFlagInputs(member, in.State)),
		Ports: []corev1.ContainerPort{
			{Name: ClientPortName, ContainerPort: ClientPort, Protocol: corev1.ProtocolTCP},
			{Name: PeerPortName, ContainerPort: PeerPort, Protocol: corev1.ProtocolTCP},
			{Name: MetricsPortName, ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:      EffectiveResources(member.Spec.Resources),
		VolumeMounts:   volumeMounts(member.Spec.TLS),
		StartupProbe:   startup,
		LivenessProbe:  liveness,
		ReadinessProbe: readiness,
		// etcd's last log lines say why it stopped (corrupt data, member removed, bad flag);
		// the failure classifier reads them from the termination message.
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          containerSecurityContext(),
	}
}

// volumes are the data volume and the TLS Secrets in use.
func volumes(member *etcdv1alpha2.EtcdMember) []corev1.Volume {
	data := corev1.Volume{Name: DataVolumeName}
	if member.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		// tmpfs counts against the Pod's memory; sizeLimit makes the kubelet evict the Pod
		// rather than let it grow without bound.
		data.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
		if size := StorageSize(member.Spec.Storage); !size.IsZero() {
			data.EmptyDir.SizeLimit = &size
		}
	} else {
		data.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: PVCName(member.Name)}
	}
	vols := []corev1.Volume{data}

	if tls := member.Spec.TLS; tls != nil {
		if tls.ClientServerSecretRef != nil {
			vols = append(vols, secretVolume(ClientTLSVolumeName, tls.ClientServerSecretRef.Name))
		}
		if tls.PeerSecretRef != nil {
			vols = append(vols, secretVolume(PeerTLSVolumeName, tls.PeerSecretRef.Name))
		}
	}
	return vols
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{
		Name: name,
		VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: secret, DefaultMode: ptr.To(tlsSecretMode)},
		},
	}
}

// volumeMounts mount the data volume and, read-only, the TLS Secrets in use. The Secrets are
// mounted as whole directories (no subPath) so that the kubelet's atomic updates of rotated
// certificates reach etcd.
func volumeMounts(tls *etcdv1alpha2.EtcdMemberTLS) []corev1.VolumeMount {
	mounts := []corev1.VolumeMount{{Name: DataVolumeName, MountPath: DataMountPath}}
	if tls == nil {
		return mounts
	}
	if tls.ClientServerSecretRef != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: ClientTLSVolumeName, MountPath: ClientTLSMountPath, ReadOnly: true})
	}
	if tls.PeerSecretRef != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: PeerTLSVolumeName, MountPath: PeerTLSMountPath, ReadOnly: true})
	}
	return mounts
}

// EffectiveResources are the etcd container's resources: the member's, or, when it sets neither
// requests nor limits, requests of 100m CPU and 128Mi memory and no limits.
func EffectiveResources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	if len(r.Requests) == 0 && len(r.Limits) == 0 && len(r.Claims) == 0 {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    defaultCPURequest.DeepCopy(),
			corev1.ResourceMemory: defaultMemoryRequest.DeepCopy(),
		}}
	}
	return *r.DeepCopy()
}

// EffectiveAffinity is a member Pod's affinity. nil means the default: a preferred pod
// anti-affinity on kubernetes.io/hostname among the cluster's members, so that one node failure
// costs at most one member where the nodes allow it. An explicit empty Affinity ({}) switches
// the default off and renders as no affinity at all; anything else is used as given.
func EffectiveAffinity(a *corev1.Affinity, cluster string) *corev1.Affinity {
	if a == nil {
		return &corev1.Affinity{
			PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: antiAffinityWeight,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{
							MatchLabels: map[string]string{etcdv1alpha2.LabelCluster: cluster},
						},
						TopologyKey: corev1.LabelHostname,
					},
				}},
			},
		}
	}
	if a.NodeAffinity == nil && a.PodAffinity == nil && a.PodAntiAffinity == nil {
		return nil
	}
	return a.DeepCopy()
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func copyTolerations(in []corev1.Toleration) []corev1.Toleration {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.Toleration, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func copyTopologySpreadConstraints(in []corev1.TopologySpreadConstraint) []corev1.TopologySpreadConstraint {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.TopologySpreadConstraint, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// selfAlias makes a member's own DNS name resolve inside its Pod from the first instant. A
// joining etcd compares every pair of peer URLs from --initial-cluster and etcd's member list,
// resolving both sides of each unequal pair and retrying a failed lookup once a second. Its own
// name gets a DNS record only when the Pod's IP reaches the headless Service's EndpointSlice,
// which happens after the container started, so the first lookup always failed: a second lost
// per join, and as long as the negative-cache lifetime where the cluster DNS caches NXDOMAIN
// for the cluster domain (CoreDNS "cache 30" without kubeadm's "disable denial"). The comparison
// only needs the name to resolve to something other than the peers' addresses; nothing dials
// it, because etcd never connects to itself and other members resolve the name through the
// cluster DNS as before.
func selfAlias(member *etcdv1alpha2.EtcdMember) []corev1.HostAlias {
	return []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: []string{MemberHost(member.Name, MemberServiceName(member), member.Namespace)}}}
}
