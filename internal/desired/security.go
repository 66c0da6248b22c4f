package desired

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// DefaultID is the UID, GID and fsGroup etcd runs as unless podSecurityContext overrides them:
// the conventional "nonroot" user of distroless images, which the official etcd images are
// built on. Any non-zero ID works, because fsGroup makes the data volume group-writable and
// Secret files group-readable.
const DefaultID int64 = 65532

// tlsSecretMode is the mode of mounted TLS files: readable by root and the fsGroup only, so the
// private key is not world-readable inside the container.
const tlsSecretMode int32 = 0o440

// PodSecurityContext is the Pod-level security context of a member: the Pod Security
// "restricted" profile (https://kubernetes.io/docs/concepts/security/pod-security-standards/),
// narrowed by the member's overrides. The overrides can change IDs and SELinux labels but never
// runAsNonRoot or the seccomp profile.
//
// fsGroupChangePolicy defaults to OnRootMismatch because a recursive chown of a large data
// directory on every start delays the member by minutes, and ownership only changes when the IDs
// do.
func PodSecurityContext(o *etcdv1alpha2.PodSecurityOverrides) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To(DefaultID),
		RunAsGroup:          ptr.To(DefaultID),
		FSGroup:             ptr.To(DefaultID),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if o == nil {
		return sc
	}
	if o.RunAsUser != nil {
		sc.RunAsUser = ptr.To(*o.RunAsUser)
	}
	if o.RunAsGroup != nil {
		sc.RunAsGroup = ptr.To(*o.RunAsGroup)
	}
	if o.FSGroup != nil {
		sc.FSGroup = ptr.To(*o.FSGroup)
	}
	if o.FSGroupChangePolicy != nil {
		sc.FSGroupChangePolicy = ptr.To(*o.FSGroupChangePolicy)
	}
	if len(o.SupplementalGroups) > 0 {
		sc.SupplementalGroups = append([]int64(nil), o.SupplementalGroups...)
	}
	if o.SELinuxOptions != nil {
		sc.SELinuxOptions = o.SELinuxOptions.DeepCopy()
	}
	return sc
}

// containerSecurityContext is the container-level part of the restricted profile, which cannot
// be set at Pod level: no privilege escalation and no capabilities. etcd binds only unprivileged
// ports and needs none. The root filesystem is read-only: etcd writes only to its data
// directory (the PVC or the Memory emptyDir), the guard's install container only to the guard's
// emptyDir, and the kubelet's termination-message file is a mount of its own.
func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}
