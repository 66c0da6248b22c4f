package legacy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// legacyManifest is a legacy EtcdCluster as a user of a late legacy release writes it, with
// every section etcd-migrate reads.
const legacyManifest = `
apiVersion: etcd.aenix.io/v1alpha1
kind: EtcdCluster
metadata:
  name: etcd
  namespace: tenant-a
spec:
  replicas: 3
  options:
    quota-backend-bytes: "2147483648"
    enable-v2: "false"
  podTemplate:
    metadata:
      labels:
        team: storage
    spec:
      priorityClassName: system-cluster-critical
      containers:
      - name: etcd
        image: quay.io/coreos/etcd:v3.5.17
        resources:
          requests:
            cpu: 200m
  serviceTemplate:
    metadata:
      name: etcd-client
      annotations:
        lb.example.com/internal: "true"
    spec:
      type: LoadBalancer
  headlessServiceTemplate:
    metadata:
      name: etcd-peers
  podDisruptionBudgetTemplate:
    spec:
      maxUnavailable: 1
  storage:
    volumeClaimTemplate:
      spec:
        storageClassName: fast
        accessModes: [ReadWriteOnce]
        resources:
          requests:
            storage: 10Gi
  security:
    enableAuth: true
    tls:
      peerTrustedCASecret: peer-ca
      peerSecret: peer-cert
      serverTrustedCASecret: server-ca
      serverSecret: server-cert
      clientTrustedCASecret: client-ca
      clientSecret: client-cert
  bootstrap:
    restore:
      source:
        pvc:
          claimName: backups
          subPath: etcd/2024.db
status:
  conditions:
  - type: Ready
    status: "True"
    reason: StatefulSetReady
    message: Cluster StatefulSet is Ready
    lastTransitionTime: "2024-05-01T10:00:00Z"
`

func unstructuredFrom(tb testing.TB, manifest string) *unstructured.Unstructured {
	tb.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		tb.Fatal(err)
	}
	return u
}

func TestDecodeClusterReadsEverySection(t *testing.T) {
	t.Parallel()
	c, err := DecodeCluster(unstructuredFrom(t, legacyManifest))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "etcd" || c.Namespace != "tenant-a" || c.Replicas() != 3 {
		t.Errorf("identity = %s/%s replicas %d", c.Namespace, c.Name, c.Replicas())
	}
	wantTLS := TLSSpec{
		PeerTrustedCASecret: "peer-ca", PeerSecret: "peer-cert",
		ServerTrustedCASecret: "server-ca", ServerSecret: "server-cert",
		ClientTrustedCASecret: "client-ca", ClientSecret: "client-cert",
	}
	if diff := cmp.Diff(wantTLS, c.TLS()); diff != "" {
		t.Errorf("TLS (-want +got):\n%s", diff)
	}
	if !c.AuthEnabled() {
		t.Error("enableAuth not read")
	}
	if got := c.Spec.Options["enable-v2"]; got != "false" {
		t.Errorf("options[enable-v2] = %q", got)
	}
	if got := c.Spec.PodTemplate.Labels["team"]; got != "storage" {
		t.Errorf("podTemplate label = %q", got)
	}
	etcd := c.Spec.PodTemplate.Spec.Containers[0]
	if etcd.Image != "quay.io/coreos/etcd:v3.5.17" || etcd.Resources.Requests.Cpu().String() != "200m" {
		t.Errorf("etcd container = %s %v", etcd.Image, etcd.Resources.Requests)
	}
	if ClientServiceName(c) != "etcd-client" || c.Spec.ServiceTemplate.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("serviceTemplate = %+v", c.Spec.ServiceTemplate)
	}
	if HeadlessServiceName(c) != "etcd-peers" {
		t.Errorf("headless = %s", HeadlessServiceName(c))
	}
	if got := c.Spec.PodDisruptionBudgetTemplate.Spec.MaxUnavailable; !cmp.Equal(got, ptr.To(intstr.FromInt32(1))) {
		t.Errorf("pdb maxUnavailable = %v", got)
	}
	vct := c.Spec.Storage.VolumeClaimTemplate.Spec
	if ptr.Deref(vct.StorageClassName, "") != "fast" || !vct.Resources.Requests.Storage().Equal(resource.MustParse("10Gi")) {
		t.Errorf("storage = %v %v", vct.StorageClassName, vct.Resources.Requests)
	}
	if c.Spec.Bootstrap.Restore.Source.PVC.ClaimName != "backups" {
		t.Errorf("bootstrap = %+v", c.Spec.Bootstrap)
	}
	if len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Reason != "StatefulSetReady" {
		t.Errorf("conditions = %+v", c.Status.Conditions)
	}
}

func TestDecodeRefusesOtherKinds(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		apiVersion, kind string
		decode           func(*unstructured.Unstructured) error
	}{
		"v1alpha2 EtcdCluster": {"etcd-operator.cozystack.io/v1alpha2", "EtcdCluster", func(u *unstructured.Unstructured) error { _, err := DecodeCluster(u); return err }},
		"backup as cluster":    {"etcd.aenix.io/v1alpha1", "EtcdBackup", func(u *unstructured.Unstructured) error { _, err := DecodeCluster(u); return err }},
		"cluster as backup":    {"etcd.aenix.io/v1alpha1", "EtcdCluster", func(u *unstructured.Unstructured) error { _, err := DecodeBackup(u); return err }},
		"cluster as schedule":  {"etcd.aenix.io/v1alpha1", "EtcdCluster", func(u *unstructured.Unstructured) error { _, err := DecodeBackupSchedule(u); return err }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tc.apiVersion, "kind": tc.kind, "metadata": map[string]any{"name": "x"}}}
			if err := tc.decode(u); err == nil {
				t.Error("decoded an object of another kind")
			}
		})
	}
	if _, err := DecodeCluster(nil); err == nil {
		t.Error("decoded nil")
	}
}

func TestDecodeReportsMalformedFields(t *testing.T) {
	t.Parallel()
	u := unstructuredFrom(t, "apiVersion: etcd.aenix.io/v1alpha1\nkind: EtcdCluster\nmetadata: {name: x}\nspec: {replicas: three}\n")
	if _, err := DecodeCluster(u); err == nil {
		t.Error("decoded replicas: three")
	}
}

func TestBackupKindsRoundTrip(t *testing.T) {
	t.Parallel()
	b := &EtcdBackup{Spec: EtcdBackupSpec{
		ClusterRef:  corev1.LocalObjectReference{Name: "etcd"},
		Destination: BackupDestination{S3: &S3BackupDestination{Endpoint: "https://s3", Bucket: "b", Key: "k/x.db", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}, ForcePathStyle: true}},
	}}
	b.Name, b.Namespace = "nightly", "tenant-a"
	u, err := ToUnstructured(b)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "etcd.aenix.io/v1alpha1" || u.GetKind() != "EtcdBackup" {
		t.Errorf("encoded as %s %s", u.GetAPIVersion(), u.GetKind())
	}
	back, err := DecodeBackup(u)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b.Spec, back.Spec); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	s := &EtcdBackupSchedule{Spec: EtcdBackupScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: "0 3 * * *",
		Destination: BackupDestination{PVC: &PVCBackupDestination{ClaimName: "backups"}}}}
	us, err := ToUnstructured(s)
	if err != nil {
		t.Fatal(err)
	}
	backS, err := DecodeBackupSchedule(us)
	if err != nil {
		t.Fatal(err)
	}
	if backS.Spec.Schedule != "0 3 * * *" || backS.Spec.Destination.PVC.ClaimName != "backups" {
		t.Errorf("schedule round trip = %+v", backS.Spec)
	}
	if _, err := ToUnstructured(&corev1.Pod{}); err == nil {
		t.Error("encoded a Pod as a legacy object")
	}
}
