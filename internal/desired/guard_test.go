package desired

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

const testGuardImage = "registry.example/etcd-operator:v1"

func TestPodGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		member       *etcdv1alpha2.EtcdMember
		image        string
		state        ClusterState
		wantGuard    bool
		wantExpected bool
		wantAwait    bool
	}{
		{name: "PVC voter", member: newMember(func(m *etcdv1alpha2.EtcdMember) { m.Status.MemberID = "8e9e05c52164694d" }),
			image: testGuardImage, wantGuard: true, wantExpected: true},
		{name: "seed before it formed the cluster", member: newMember(func(m *etcdv1alpha2.EtcdMember) {
			m.Status, m.Spec.Bootstrap = etcdv1alpha2.EtcdMemberStatus{}, true
		}), image: testGuardImage, state: ClusterStateNew, wantGuard: true},
		// A member for which no etcd ID was recorded may be staged: its Pod exists before its add,
		// and the guard holds etcd until a peer lists it.
		{name: "joiner before it was added", member: newMember(func(m *etcdv1alpha2.EtcdMember) { m.Status = etcdv1alpha2.EtcdMemberStatus{} }),
			image: testGuardImage, wantGuard: true, wantAwait: true},
		{name: "joiner before its first start", member: newMember(func(m *etcdv1alpha2.EtcdMember) {
			m.Status = etcdv1alpha2.EtcdMemberStatus{MemberID: "8e9e05c52164694d"}
		}), image: testGuardImage, wantGuard: true},
		{name: "learner that has run", member: newMember(func(m *etcdv1alpha2.EtcdMember) {
			m.Status = etcdv1alpha2.EtcdMemberStatus{MemberID: "8e9e05c52164694d", Version: "3.6.5"}
		}), image: testGuardImage, wantGuard: true, wantExpected: true},
		{name: "Memory member", member: newMember(func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Storage = storageSpec("1Gi", etcdv1alpha2.StorageMediumMemory)
			m.Status.MemberID = "8e9e05c52164694d"
		}), image: testGuardImage, wantGuard: true, wantExpected: true},
		// Memory members are never staged: their Pods are built after the add.
		{name: "Memory joiner before it was added", member: newMember(func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Storage = storageSpec("1Gi", etcdv1alpha2.StorageMediumMemory)
			m.Status = etcdv1alpha2.EtcdMemberStatus{}
		}), image: testGuardImage, wantGuard: true},
		{name: "no guard image", member: newMember(func(m *etcdv1alpha2.EtcdMember) { m.Status.MemberID = "8e9e05c52164694d" })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			state := tc.state
			if state == "" {
				state = ClusterStateExisting
			}
			pod := Pod(tc.member, Inputs{State: state, GuardImage: tc.image})
			plain := Pod(tc.member, Inputs{State: state})
			// The guard image is in the hash of exactly the Pods that run the guard, so
			// that a new operator image rolls them and nothing else.
			if changed := pod.Annotations[etcdv1alpha2.AnnotationTemplateHash] != plain.Annotations[etcdv1alpha2.AnnotationTemplateHash]; changed != tc.wantGuard {
				t.Errorf("guard image changed the template hash: %v, want %v", changed, tc.wantGuard)
			}
			checkGuard(t, pod, plain, tc.image, tc.wantGuard, tc.wantExpected, tc.wantAwait)
		})
	}
}

// checkGuard checks pod against the unguarded plain, built from the same member.
func checkGuard(t *testing.T, pod, plain *corev1.Pod, image string, wantGuard, wantExpected, wantAwait bool) {
	t.Helper()
	etcd := pod.Spec.Containers[0]
	if !wantGuard {
		if len(pod.Spec.InitContainers) != 0 || !slices.Equal(etcd.Command, []string{EtcdBinary}) {
			t.Fatalf("unguarded Pod has init containers %v, command %v", pod.Spec.InitContainers, etcd.Command)
		}
		return
	}
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Image != image ||
		!slices.Equal(pod.Spec.InitContainers[0].Command, []string{"/etcd-guard", "install", GuardBinary}) {
		t.Fatalf("init containers %+v", pod.Spec.InitContainers)
	}
	want := []string{GuardBinary, "run", "--data-dir=/var/lib/etcd", "--marker=" + GuardMarker, "--termination-log=/dev/termination-log",
		"--recovery-listen=:2382", "--force-new-cluster-file=" + GuardForceFile, "--forced-marker=" + GuardForcedMarker}
	if wantExpected {
		want = append(want, "--data-expected")
	}
	if wantAwait {
		want = append(want, "--await-membership")
	}
	want = append(want, "--", EtcdBinary)
	if !slices.Equal(etcd.Command, want) {
		t.Errorf("command %q, want %q", etcd.Command, want)
	}
	if !slices.Equal(etcd.Args, plain.Spec.Containers[0].Args) {
		t.Error("the guard changed etcd's flags")
	}
	checkGuardVolumes(t, pod)
	checkRecoveryWiring(t, pod)
}

// checkRecoveryWiring checks what quorum-loss recovery needs in the Pod
// (docs/design/quorum-recovery.md): the force-new-cluster annotation projected read-only where
// the guard reads it, and the guard port declared.
func checkRecoveryWiring(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	var projected bool
	for _, v := range pod.Spec.Volumes {
		if v.Name == GuardPodInfoVolumeName && v.DownwardAPI != nil && len(v.DownwardAPI.Items) == 1 &&
			v.DownwardAPI.Items[0].FieldRef.FieldPath == "metadata.annotations['"+etcdv1alpha2.AnnotationForceNewCluster+"']" &&
			GuardPodInfoMountPath+"/"+v.DownwardAPI.Items[0].Path == GuardForceFile {
			projected = true
		}
	}
	mounted := slices.ContainsFunc(pod.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == GuardPodInfoVolumeName && m.MountPath == GuardPodInfoMountPath && m.ReadOnly
	})
	if !projected || !mounted {
		t.Errorf("the force-new-cluster annotation is not projected read-only at %s: volumes %+v", GuardForceFile, pod.Spec.Volumes)
	}
	if !slices.ContainsFunc(pod.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == GuardPortName && p.ContainerPort == GuardPort }) {
		t.Errorf("ports %+v lack the guard port", pod.Spec.Containers[0].Ports)
	}
}

// checkGuardVolumes checks that the guard binary is written by the install container and
// read-only where etcd runs (the volume outlives etcd's restarts, so a writable mount would let
// the container replace what its next start runs), and that the marker has a writable volume of
// its own in etcd's container (an e2e roll caught a read-only marker: the restarted guard
// could not record it).
func checkGuardVolumes(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	mount := func(ms []corev1.VolumeMount, name, path string, readOnly bool) bool {
		return slices.ContainsFunc(ms, func(m corev1.VolumeMount) bool {
			return m.Name == name && m.MountPath == path && m.ReadOnly == readOnly
		})
	}
	etcd := pod.Spec.Containers[0].VolumeMounts
	if !mount(etcd, GuardVolumeName, GuardMountPath, true) || !mount(etcd, GuardStateVolumeName, GuardStateMountPath, false) {
		t.Errorf("etcd's guard mounts %+v: want the binary read-only at %s and the marker writable at %s", etcd, GuardMountPath, GuardStateMountPath)
	}
	install := pod.Spec.InitContainers[0].VolumeMounts
	if !mount(install, GuardVolumeName, GuardMountPath, false) || len(install) != 1 {
		t.Errorf("install container mounts %+v: want only the binary's volume, writable", install)
	}
	if !strings.HasPrefix(GuardMarker, GuardStateMountPath+"/") || strings.HasPrefix(GuardBinary, GuardStateMountPath+"/") {
		t.Errorf("marker %s must live on the state volume (%s), binary %s must not", GuardMarker, GuardStateMountPath, GuardBinary)
	}
	for _, name := range []string{GuardVolumeName, GuardStateVolumeName} {
		if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Name == name && v.EmptyDir != nil && v.EmptyDir.Medium == "" && v.EmptyDir.SizeLimit != nil
		}) {
			t.Errorf("volume %s is not declared as a bounded disk emptyDir", name)
		}
	}
}

func TestPodGuardFollowsDataDirSubPath(t *testing.T) {
	t.Parallel()
	m := newMember(func(m *etcdv1alpha2.EtcdMember) {
		m.Annotations = map[string]string{etcdv1alpha2.AnnotationDataDirSubPath: "etcd"}
	})
	cmd := Pod(m, Inputs{GuardImage: testGuardImage}).Spec.Containers[0].Command
	if !slices.Contains(cmd, "--data-dir=/var/lib/etcd/etcd") {
		t.Fatalf("guard command %q does not watch the subpath data dir", cmd)
	}
}
