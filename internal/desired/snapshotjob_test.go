package desired

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

func snapshotOf(dest etcdv1alpha2.SnapshotLocation) *etcdv1alpha2.EtcdSnapshot {
	return &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1", Namespace: "ns", UID: "uid-1"},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Destination: dest}}
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

// TestSnapshotJobNeverLooksLikeAMember: a snapshot Pod that carried the cluster label would be
// an endpoint of the client Service and count in status.selector and the PDB.
func TestSnapshotJobNeverLooksLikeAMember(t *testing.T) {
	t.Parallel()
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns"}}
	job := SnapshotJob(SnapshotJobInput{Snapshot: snapshotOf(etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "b"}}), Cluster: c, Image: "op:1"})
	for _, labels := range []map[string]string{job.Labels, job.Spec.Template.Labels} {
		for _, k := range []string{etcdv1alpha2.LabelCluster, etcdv1alpha2.LabelComponent, etcdv1alpha2.LabelRole} {
			if _, ok := labels[k]; ok {
				t.Errorf("label %s on the snapshot Job or its Pods", k)
			}
		}
		if labels[etcdv1alpha2.LabelName] != etcdv1alpha2.NameSnapshotAgent || labels[etcdv1alpha2.LabelSnapshot] != "nightly-1" {
			t.Errorf("labels %v", labels)
		}
	}
	if job.Name != "nightly-1-snapshot" || *job.Spec.Template.Spec.AutomountServiceAccountToken || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("job %s: token %v, restart %s", job.Name, *job.Spec.Template.Spec.AutomountServiceAccountToken, job.Spec.Template.Spec.RestartPolicy)
	}
	// The agent's own binary, not the operator's: it is what keeps the Job's memory small.
	if agent := job.Spec.Template.Spec.Containers[0]; !slices.Equal(agent.Command, []string{"/etcd-snapshot-agent"}) || len(agent.Args) != 0 || agent.Image != "op:1" {
		t.Errorf("agent container runs %q %q from %s, want /etcd-snapshot-agent from the operator's image", agent.Command, agent.Args, agent.Image)
	}
	rule := job.Spec.PodFailurePolicy.Rules[0]
	if !slices.Contains(rule.OnExitCodes.Values, snapshot.ExitPermanent) {
		t.Errorf("a permanent failure (exit %d) does not end the Job at once: %+v", snapshot.ExitPermanent, rule)
	}
}

// TestSnapshotJobMountsOnlyWhatTheAgentReads: mTLS, auth and S3 with a private CA give the agent
// files, each from the one Secret key it needs; a plaintext cluster gets an http endpoint and no
// Secret at all.
func TestSnapshotJobMountsOnlyWhatTheAgentReads(t *testing.T) {
	t.Parallel()
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns"}}
	s3 := etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{Endpoint: "https://s3:8333", Bucket: "b", Key: "k", ForcePathStyle: true,
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}, CASecretRef: &corev1.LocalObjectReference{Name: "s3-ca"}}}
	job := SnapshotJob(SnapshotJobInput{Snapshot: snapshotOf(s3), Cluster: c, Image: "op:1", CASecret: "etcd-server-tls", ClientSecret: "etcd-operator-client-tls", PasswordSecret: "root"}) //nolint:gosec // G101: Secret names, no credential
	pod := job.Spec.Template.Spec
	env := envOf(pod.Containers[0])
	want := map[string]string{
		snapshot.EnvEndpoints: "https://etcd-client.ns.svc:2379", snapshot.EnvCAFile: "/etc/etcd-snapshot/etcd-ca/ca.crt",
		snapshot.EnvCertFile: "/etc/etcd-snapshot/etcd-client/tls.crt", snapshot.EnvKeyFile: "/etc/etcd-snapshot/etcd-client/tls.key",
		snapshot.EnvUsername: "root", snapshot.EnvPasswordFile: "/etc/etcd-snapshot/etcd-root/password",
		snapshot.EnvDestination: snapshot.DestinationS3, snapshot.EnvS3Bucket: "b", snapshot.EnvS3Key: "k", snapshot.EnvS3ForcePathStyle: "true",
		snapshot.EnvS3CredentialsDir: "/etc/etcd-snapshot/s3-credentials", snapshot.EnvS3CAFile: "/etc/etcd-snapshot/s3-ca/ca.crt",
		snapshot.EnvSnapshotUID: "uid-1",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	keys := map[string][]string{}
	for _, v := range pod.Volumes {
		for _, item := range v.Secret.Items {
			keys[v.Secret.SecretName] = append(keys[v.Secret.SecretName], item.Key)
		}
	}
	wantKeys := map[string]string{"etcd-server-tls": "ca.crt", //nolint:gosec // G101: Secret names and keys, no credential "etcd-operator-client-tls": "tls.crt,tls.key", "root": "password",
		"creds": "AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY", "s3-ca": "ca.crt"}
	for secret, k := range wantKeys {
		if got := strings.Join(keys[secret], ","); got != k {
			t.Errorf("Secret %s projects %q, want %q", secret, got, k)
		}
	}
	plain := SnapshotJob(SnapshotJobInput{Snapshot: snapshotOf(etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "b", SubPath: "etcd"}}), Cluster: c, Image: "op:1"})
	penv := envOf(plain.Spec.Template.Spec.Containers[0])
	if penv[snapshot.EnvEndpoints] != "http://etcd-client.ns.svc:2379" || penv[snapshot.EnvPVCDir] != "/backup" || penv[snapshot.EnvPVCSubPath] != "etcd" || penv[snapshot.EnvCAFile] != "" {
		t.Errorf("plaintext PVC snapshot env %v", penv)
	}
	if vs := plain.Spec.Template.Spec.Volumes; len(vs) != 1 || vs[0].PersistentVolumeClaim == nil || vs[0].PersistentVolumeClaim.ClaimName != "b" {
		t.Errorf("volumes %+v, want the claim only", vs)
	}
}

// TestSnapshotJobCarriesTheSchedule: a schedule's snapshot tells the agent the schedule's name,
// UID and retention; a one-off snapshot tells it none of them, so it marks and prunes nothing.
func TestSnapshotJobCarriesTheSchedule(t *testing.T) {
	t.Parallel()
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns"}}
	in := SnapshotJobInput{Snapshot: snapshotOf(etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "b"}}), Cluster: c, Image: "op:1",
		ScheduleName: "nightly", ScheduleUID: "uid-schedule",
		Retention: &etcdv1alpha2.SnapshotRetention{KeepLast: ptr.To[int32](3), KeepWeekly: ptr.To[int32](4)}, RetentionTimeZone: "Europe/Berlin"}
	env := envOf(SnapshotJob(in).Spec.Template.Spec.Containers[0])
	want := map[string]string{snapshot.EnvScheduleName: "nightly", snapshot.EnvScheduleUID: "uid-schedule",
		snapshot.EnvRetentionKeepLast: "3", snapshot.EnvRetentionKeepWeekly: "4", snapshot.EnvRetentionTimeZone: "Europe/Berlin"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	// The agent accepts what the Job renders.
	if _, err := snapshot.ParseConfig(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Errorf("the agent refuses the rendered environment: %v", err)
	}
	if _, set := env[snapshot.EnvRetentionKeepDaily]; set {
		t.Errorf("%s is set although keepDaily is not", snapshot.EnvRetentionKeepDaily)
	}
	in.Retention = nil
	if env := envOf(SnapshotJob(in).Spec.Template.Spec.Containers[0]); env[snapshot.EnvScheduleUID] != "uid-schedule" || env[snapshot.EnvRetentionKeepLast] != "" {
		t.Errorf("a schedule without retention: %v; want the schedule marked, no retention", env)
	}
	in.ScheduleName, in.ScheduleUID = "", ""
	for k := range envOf(SnapshotJob(in).Spec.Template.Spec.Containers[0]) {
		if strings.HasPrefix(k, "SNAPSHOT_SCHEDULE_") || strings.HasPrefix(k, "SNAPSHOT_RETENTION_") {
			t.Errorf("a one-off snapshot's Job sets %s", k)
		}
	}
}
