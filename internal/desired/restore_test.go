package desired

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/restore"
)

const testOperatorImage = "ghcr.io/etcd-operator/etcd-operator:v1.2.3"

func pvcRestore(m *etcdv1alpha2.EtcdMember) {
	m.Spec.Bootstrap = true
	m.Status = etcdv1alpha2.EtcdMemberStatus{IsVoter: true}
	m.Spec.Restore = &etcdv1alpha2.RestoreSpec{
		Source:   etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "etcd/nightly.db"}},
		Checksum: "sha256:" + strings.Repeat("a", 64),
	}
}

func s3Restore(m *etcdv1alpha2.EtcdMember) {
	m.Spec.Bootstrap = true
	m.Status = etcdv1alpha2.EtcdMemberStatus{IsVoter: true}
	m.Spec.Restore = &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{
		Endpoint: "https://s3.example.net", Bucket: "backups", Key: "prod/etcd/nightly.db", Region: "eu-central-1", ForcePathStyle: true,
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-credentials"}, CASecretRef: ref("s3-ca"),
	}}}
}

func initContainerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.InitContainers {
		out = append(out, c.Name)
	}
	return out
}

// TestRestoreOnlyForTheSeedBeforeTheClusterForms: the restore init containers are rendered for
// the seed carrying restore while it may found the cluster, and for nothing else: not once etcd
// reported its member ID or the cluster latched a cluster ID (a seed whose volume comes back
// empty must not be restored again under the cluster's identity), not for another member, not
// without restore.
func TestRestoreOnlyForTheSeedBeforeTheClusterForms(t *testing.T) {
	t.Parallel()
	restoring := []string{GuardContainerName, RestoreToolsContainerName, RestoreContainerName}
	for name, c := range map[string]struct {
		mut       func(*etcdv1alpha2.EtcdMember)
		clusterID string
		want      []string
	}{
		"seed, new cluster":           {mut: pvcRestore, want: restoring},
		"seed, member ID reported":    {mut: func(m *etcdv1alpha2.EtcdMember) { pvcRestore(m); m.Status.MemberID = "8e9e05c52164694d" }, want: []string{GuardContainerName}},
		"seed, cluster ID latched":    {mut: pvcRestore, clusterID: "cdf818194e3a8c32", want: []string{GuardContainerName}},
		"seed without restore":        {mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Bootstrap, m.Status = true, etcdv1alpha2.EtcdMemberStatus{} }, want: []string{GuardContainerName}},
		"another member with restore": {mut: func(m *etcdv1alpha2.EtcdMember) { pvcRestore(m); m.Spec.Bootstrap = false }, want: []string{GuardContainerName}},
	} {
		m := newMember(c.mut)
		state, err := InitialClusterState(m, c.clusterID, true)
		if err != nil {
			t.Fatal(err)
		}
		p := Pod(m, Inputs{State: state, GuardImage: testOperatorImage})
		if got := initContainerNames(p); !slices.Equal(got, c.want) {
			t.Errorf("%s: init containers %v, want %v", name, got, c.want)
		}
		if Restores(m, Inputs{State: state}) != (len(c.want) == 3) {
			t.Errorf("%s: Restores disagrees with the Pod", name)
		}
	}
}

// TestRestoreFromPVCContainers: install-tools runs the operator's image to copy its binary;
// restore runs that binary in the etcd image with the seed's identity, the data volume, and the
// claim read-only.
func TestRestoreFromPVCContainers(t *testing.T) {
	t.Parallel()
	m := newMember(pvcRestore)
	p := Pod(m, Inputs{State: ClusterStateNew, GuardImage: testOperatorImage})
	tools, agent := p.Spec.InitContainers[1], p.Spec.InitContainers[2]
	if tools.Image != testOperatorImage || !slices.Equal(tools.Command, []string{"/etcd-operator", "restore-agent", "install", "/opt/etcd-restore/etcd-operator"}) {
		t.Errorf("install-tools: %s %v", tools.Image, tools.Command)
	}
	if agent.Image != "quay.io/coreos/etcd:v3.6.5" || !slices.Equal(agent.Command, []string{"/opt/etcd-restore/etcd-operator", "restore-agent"}) {
		t.Errorf("restore: %s %v", agent.Image, agent.Command)
	}
	want := []corev1.EnvVar{
		{Name: restore.EnvDataDir, Value: "/var/lib/etcd"},
		{Name: restore.EnvName, Value: testMemberName},
		{Name: restore.EnvInitialCluster, Value: testInitial},
		{Name: restore.EnvClusterToken, Value: testToken},
		{Name: restore.EnvPeerURL, Value: "http://main-x7k2p.main.prod.svc:2380"},
		{Name: restore.EnvEtcdVersion, Value: "3.6.5"},
		{Name: restore.EnvEtcdutl, Value: "/usr/local/bin/etcdutl"},
		{Name: restore.EnvChecksum, Value: m.Spec.Restore.Checksum},
		{Name: restore.EnvSource, Value: restore.SourcePVC},
		{Name: restore.EnvPVCDir, Value: "/var/run/etcd-restore/source"},
		{Name: restore.EnvPVCClaim, Value: "backups"},
		{Name: restore.EnvPVCPath, Value: "etcd/nightly.db"},
	}
	if d := cmp.Diff(want, agent.Env); d != "" {
		t.Errorf("restore env (-want +got):\n%s", d)
	}
	// The flags etcd starts with name the same member the agent restores.
	args := strings.Join(p.Spec.Containers[0].Args, " ")
	for _, f := range []string{"--name=" + testMemberName, "--initial-cluster=" + testInitial, "--initial-cluster-token=" + testToken,
		"--initial-advertise-peer-urls=http://main-x7k2p.main.prod.svc:2380", "--data-dir=/var/lib/etcd"} {
		if !strings.Contains(args, f) {
			t.Errorf("etcd's flags %q lack %s", args, f)
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range agent.VolumeMounts {
		mounts[vm.Name] = vm
	}
	if mounts[DataVolumeName].MountPath != DataMountPath || mounts[DataVolumeName].ReadOnly || !mounts["restore-tools"].ReadOnly ||
		!mounts["restore-source"].ReadOnly {
		t.Errorf("restore mounts %+v", agent.VolumeMounts)
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == "restore-source" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "backups" || !v.PersistentVolumeClaim.ReadOnly) {
			t.Errorf("source volume %+v", v)
		}
	}
	if d := cmp.Diff(EffectiveResources(m.Spec.Resources), agent.Resources); d != "" {
		t.Errorf("restore resources differ from etcd's:\n%s", d)
	}
}

// TestRestoreFromS3Containers: only the credential and CA keys are projected, each from its
// Secret; the environment names files, never a secret value.
func TestRestoreFromS3Containers(t *testing.T) {
	t.Parallel()
	p := Pod(newMember(s3Restore), Inputs{State: ClusterStateNew, GuardImage: testOperatorImage})
	agent := p.Spec.InitContainers[2]
	env := map[string]string{}
	for _, e := range agent.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil || strings.HasPrefix(e.Name, "AWS_") {
			t.Errorf("env %s carries a credential", e.Name)
		}
	}
	for k, v := range map[string]string{
		restore.EnvSource: restore.SourceS3, restore.EnvS3Endpoint: "https://s3.example.net", restore.EnvS3Bucket: "backups",
		restore.EnvS3Key: "prod/etcd/nightly.db", restore.EnvS3Region: "eu-central-1", restore.EnvS3ForcePathStyle: "true",
		restore.EnvS3CredentialsDir: "/etc/etcd-restore/restore-s3-credentials", restore.EnvS3CAFile: "/etc/etcd-restore/restore-s3-ca/ca.crt",
	} {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if _, ok := env[restore.EnvChecksum]; ok {
		t.Error("a checksum was rendered although the spec names none")
	}
	projected := map[string][]string{}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			for _, it := range v.Secret.Items {
				projected[v.Secret.SecretName] = append(projected[v.Secret.SecretName], it.Key)
			}
		}
	}
	want := map[string][]string{"s3-credentials": {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}, "s3-ca": {"ca.crt"}}
	if d := cmp.Diff(want, projected); d != "" {
		t.Errorf("projected Secret keys (-want +got):\n%s", d)
	}
}

// TestRestorePodsPassRestrictedPodSecurity: a restoring seed's Pod, with every source and TLS,
// passes Pod Security restricted.
func TestRestorePodsPassRestrictedPodSecurity(t *testing.T) {
	t.Parallel()
	evaluate := restrictedEvaluator(t)
	for name, mut := range map[string]func(*etcdv1alpha2.EtcdMember){
		"pvc": pvcRestore, "s3": s3Restore,
		"s3, mTLS": func(m *etcdv1alpha2.EtcdMember) {
			s3Restore(m)
			m.Spec.TLS = &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("main-server-tls"), ClientMTLS: true, PeerSecretRef: ref("main-peer-tls")}
		},
	} {
		p := Pod(newMember(mut), Inputs{State: ClusterStateNew, GuardImage: testOperatorImage, CADigests: CADigests{Client: "sha256:1", Peer: "sha256:2"}})
		if len(p.Spec.InitContainers) != 3 {
			t.Fatalf("%s: %d init containers", name, len(p.Spec.InitContainers))
		}
		if failures := evaluate(p); len(failures) > 0 {
			t.Errorf("%s violates Pod Security restricted:\n  %s", name, strings.Join(failures, "\n  "))
		}
	}
}

// TestRestoreLeavesTheTemplateHash: the seed's first Pod, which restores, and its later ones,
// which do not, carry the same template hash: the end of the restore rolls nothing.
func TestRestoreLeavesTheTemplateHash(t *testing.T) {
	t.Parallel()
	m := newMember(s3Restore)
	first := Pod(m, Inputs{State: ClusterStateNew, GuardImage: testOperatorImage})
	later := Pod(m, Inputs{State: ClusterStateExisting, GuardImage: testOperatorImage})
	if a, b := first.Annotations[etcdv1alpha2.AnnotationTemplateHash], later.Annotations[etcdv1alpha2.AnnotationTemplateHash]; a != b || a == "" {
		t.Errorf("template hash %q while restoring, %q after", a, b)
	}
}
