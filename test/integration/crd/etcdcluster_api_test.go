package crd_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// The example of docs/api.md, "Example", byte for byte: users' manifests must work unchanged.
const apiSpecExample = `
apiVersion: etcd-operator.cozystack.io/v1alpha2
kind: EtcdCluster
metadata: {name: etcd, namespace: tenant-a}
spec:
  replicas: 3
  version: 3.6.5
  storage: {size: 4Gi, reclaimPolicy: Retain}            # reclaimPolicy: this project only
  tls:
    client: {certManager: {serverIssuerRef: {name: etcd-ca}, operatorClientIssuerRef: {name: etcd-ca}}}
    peer:   {certManager: {issuerRef: {name: etcd-ca}}}
  auth: {enabled: true, rootCredentialsSecretRef: {name: etcd-root}}
  options: {autoCompactionMode: periodic, autoCompactionRetention: 5m}
  tolerations: [{key: dedicated, value: etcd, effect: NoSchedule}]   # this project only
  clientService: {type: LoadBalancer}                                # this project only
`

// The quick-start sample the README and config/samples use.
const quickStartSample = `
apiVersion: etcd-operator.cozystack.io/v1alpha2
kind: EtcdCluster
metadata: {name: etcd}
spec:
  replicas: 3
  version: 3.6.16
  storage: {size: 1Gi}
`

func applyYAML(t *testing.T, manifest, namespace string) (*unstructured.Unstructured, error) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("parsing the manifest: %v", err)
	}
	if namespace != "" {
		obj.SetNamespace(namespace)
	}
	return obj, k8sClient.Create(t.Context(), obj)
}

func TestManifestsFromTheDocsAreAcceptedUnchanged(t *testing.T) {
	t.Parallel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}
	if err := k8sClient.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating namespace tenant-a: %v", err)
	}
	if _, err := applyYAML(t, apiSpecExample, ""); err != nil {
		t.Fatalf("the docs/api.md example was rejected: %v", err)
	}
	sample, err := os.ReadFile(filepath.Join(repoRoot(), "config", "samples", "etcdcluster.yaml"))
	if err != nil {
		t.Fatalf("reading config/samples/etcdcluster.yaml: %v", err)
	}
	for name, manifest := range map[string]string{"quick start": quickStartSample, "config/samples": string(sample)} {
		if _, err := applyYAML(t, manifest, newNamespace(t)); err != nil {
			t.Errorf("the %s sample was rejected: %v", name, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	cluster := minimalCluster(newNamespace(t), "defaults")
	if err := k8sClient.Create(t.Context(), cluster); err != nil {
		t.Fatalf("creating a minimal cluster: %v", err)
	}
	want := etcdv1alpha2.EtcdClusterSpec{
		Replicas: ptr.To[int32](3),
		Version:  "3.6.5",
		Storage: etcdv1alpha2.StorageSpec{
			Size:          ptr.To(resource.MustParse("1Gi")),
			Medium:        etcdv1alpha2.StorageMediumDefault,
			ReclaimPolicy: etcdv1alpha2.ReclaimPolicyDelete,
		},
		ProgressDeadlineSeconds: ptr.To[int32](600),
	}
	if !apiequality.Semantic.DeepEqual(want, cluster.Spec) {
		t.Errorf("defaulted spec differs (-want +got):\n%s", cmp.Diff(want, cluster.Spec))
	}
}

func TestScaleSubresource(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cluster := minimalCluster(newNamespace(t), "scaled")
	if err := k8sClient.Create(ctx, cluster); err != nil {
		t.Fatalf("creating a cluster: %v", err)
	}
	cluster.Status.ReadyMembers = 2
	cluster.Status.Selector = etcdv1alpha2.LabelCluster + "=scaled"
	if err := k8sClient.Status().Update(ctx, cluster); err != nil {
		t.Fatalf("writing status: %v", err)
	}

	scale := &autoscalingv1.Scale{}
	if err := k8sClient.SubResource("scale").Get(ctx, cluster, scale); err != nil {
		t.Fatalf("getting /scale: %v", err)
	}
	if scale.Spec.Replicas != 3 || scale.Status.Replicas != 2 || scale.Status.Selector != cluster.Status.Selector {
		t.Fatalf("/scale = spec %d, status %d, selector %q; want 3, 2, %q",
			scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector, cluster.Status.Selector)
	}

	scale.Spec.Replicas = 5
	if err := k8sClient.SubResource("scale").Update(ctx, cluster, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("updating /scale: %v", err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
		t.Fatalf("reading the cluster back: %v", err)
	}
	if got := ptr.Deref(cluster.Spec.Replicas, -1); got != 5 {
		t.Fatalf("spec.replicas = %d after scaling to 5", got)
	}

	// kubectl scale is held to the same bound as an edit of spec.replicas (rule 19).
	if err := k8sClient.SubResource("scale").Get(ctx, cluster, scale); err != nil {
		t.Fatalf("getting /scale: %v", err)
	}
	scale.Spec.Replicas = 8
	err := k8sClient.SubResource("scale").Update(ctx, cluster, client.WithSubResourceBody(scale))
	requireInvalid(t, err, "spec.replicas", etcdv1alpha2.MsgReplicasMax)
}

// everyField is an EtcdCluster with every optional field set, for the round-trip test.
func everyField(namespace string) *etcdv1alpha2.EtcdCluster {
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "everything"},
		Spec: etcdv1alpha2.EtcdClusterSpec{
			Replicas: ptr.To[int32](5),
			Version:  "3.6.16",
			Storage: etcdv1alpha2.StorageSpec{
				Size: ptr.To(resource.MustParse("8Gi")), StorageClassName: ptr.To("fast"),
				ReclaimPolicy: etcdv1alpha2.ReclaimPolicyRetain,
			},
			ProgressDeadlineSeconds: ptr.To[int32](900),
			TLS: &etcdv1alpha2.EtcdClusterTLS{
				Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: secretRef("server"), OperatorClientSecretRef: secretRef("operator")},
				Peer:   &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: etcdv1alpha2.IssuerReference{Name: "ca", Kind: "ClusterIssuer"}}},
			},
			Auth: &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: secretRef("root")},
			Bootstrap: &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{
				Source: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{
					Endpoint: "https://s3.example.test", Bucket: "b", Key: "k/snap.db", Region: "eu-west-1",
					ForcePathStyle: true, CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"},
				}},
				Checksum: "sha256:" + strings.Repeat("ab", 32),
			}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			},
			AdditionalMetadata: &etcdv1alpha2.AdditionalMetadata{
				Labels: map[string]string{"team": "storage"}, Annotations: map[string]string{"note": "x"},
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey:   "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{etcdv1alpha2.LabelCluster: "everything"}},
				}},
			}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{etcdv1alpha2.LabelCluster: "everything"}},
			}},
			Options: &etcdv1alpha2.EtcdOptions{
				QuotaBackendBytes: ptr.To[int64](4 << 30), AutoCompactionMode: etcdv1alpha2.AutoCompactionRevision,
				AutoCompactionRetention: "1000", SnapshotCount: ptr.To[int64](10000),
			},
			ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "registry"}},
			NodeSelector:      map[string]string{"node-role": "etcd"},
			Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "etcd", Effect: corev1.TaintEffectNoSchedule}},
			PriorityClassName: "system-cluster-critical",
			PodSecurityContext: &etcdv1alpha2.PodSecurityOverrides{
				RunAsUser: ptr.To[int64](1001), RunAsGroup: ptr.To[int64](1002), FSGroup: ptr.To[int64](1003),
				FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeAlways), SupplementalGroups: []int64{4000},
				SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c123,c456"},
			},
			ClientService: &etcdv1alpha2.ClientServiceSpec{Type: "NodePort", Annotations: map[string]string{"a": "b"}, AllowUnauthenticated: true},
		},
	}
}

func TestEveryFieldRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sent := everyField(newNamespace(t))
	stored := sent.DeepCopy()
	if err := k8sClient.Create(ctx, stored); err != nil {
		t.Fatalf("creating a cluster with every field set: %v", err)
	}
	read := &etcdv1alpha2.EtcdCluster{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sent), read); err != nil {
		t.Fatalf("reading it back: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(sent.Spec, read.Spec) {
		t.Errorf("spec changed on the way through the API server (-sent +read):\n%s", cmp.Diff(sent.Spec, read.Spec))
	}

	// Status round-trips too: observed reuses spec types, so its schema carries their rules.
	read.Status = etcdv1alpha2.EtcdClusterStatus{
		ReadyMembers: 5, UpdatedMembers: 4, BrokenMembers: 1, Selector: etcdv1alpha2.LabelCluster + "=everything",
		RunningVersion: "3.6.16", ClusterID: "769f1c9e0d723d0b", ClusterToken: "ns-everything-uid", AuthEnabled: true,
		ObservedGeneration: read.Generation,
		ProgressDeadline:   ptr.To(metav1.NewTime(read.CreationTimestamp.Add(600_000_000_000))),
		Observed: &etcdv1alpha2.ObservedClusterSpec{
			Replicas: 5, Version: "3.6.16", Storage: read.Spec.Storage, Resources: read.Spec.Resources,
			Affinity: read.Spec.Affinity, TopologySpreadConstraints: read.Spec.TopologySpreadConstraints,
			AdditionalMetadata: read.Spec.AdditionalMetadata, Options: read.Spec.Options,
			ImagePullSecrets: read.Spec.ImagePullSecrets, NodeSelector: read.Spec.NodeSelector,
			Tolerations: read.Spec.Tolerations, PriorityClassName: read.Spec.PriorityClassName,
			PodSecurityContext: read.Spec.PodSecurityContext,
		},
		Conditions: []metav1.Condition{{
			Type: etcdv1alpha2.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "QuorumHealthy",
			Message: "5/5 voters ready", ObservedGeneration: read.Generation, LastTransitionTime: read.CreationTimestamp,
		}},
	}
	wantStatus := read.Status.DeepCopy()
	if err := k8sClient.Status().Update(ctx, read); err != nil {
		t.Fatalf("writing a full status: %v", err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sent), read); err != nil {
		t.Fatalf("reading it back: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(*wantStatus, read.Status) {
		t.Errorf("status changed on the way through the API server (-sent +read):\n%s", cmp.Diff(*wantStatus, read.Status))
	}
}

// TestMalformedManifestsNameTheField sends JSON a typed client could never produce.
func TestMalformedManifestsNameTheField(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := []struct {
		name, manifest, wantField string
	}{
		{"replicas as a word", `{"spec":{"version":"3.6.5","replicas":"three"}}`, "spec.replicas"},
		{"storage as a list", `{"spec":{"version":"3.6.5","storage":["1Gi"]}}`, "spec.storage"},
		{"size not a quantity", `{"spec":{"version":"3.6.5","storage":{"size":"lots"}}}`, "spec.storage.size"},
		{"no version", `{"spec":{"replicas":1}}`, "spec.version"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON([]byte(`{"apiVersion":"etcd-operator.cozystack.io/v1alpha2","kind":"EtcdCluster",` +
				`"metadata":{"name":"m` + string(rune('a'+i)) + `"},` + tc.manifest[1:])); err != nil {
				t.Fatalf("building the object: %v", err)
			}
			obj.SetNamespace(ns)
			err := k8sClient.Create(t.Context(), obj)
			if err == nil {
				t.Fatal("the API server accepted a malformed manifest")
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Fatalf("error does not name %s: %v", tc.wantField, err)
			}
		})
	}
}

// TestExplainDescribesEveryField runs the real kubectl explain against the API server.
func TestExplainDescribesEveryField(t *testing.T) {
	t.Parallel()
	kubeconfig := writeKubeconfig(t)
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	spec := reflectFieldNames(etcdv1alpha2.EtcdClusterSpec{})
	// The API server publishes a new CRD's OpenAPI asynchronously; wait until kubectl sees it.
	waitForExplain(t, kubectl, kubeconfig, "etcdcluster.spec")
	for _, path := range append([]string{"etcdcluster.spec"}, prefixed("etcdcluster.spec.", spec)...) {
		out := explain(t.Context(), t, kubectl, kubeconfig, path)
		if !strings.Contains(out, "DESCRIPTION:") {
			t.Fatalf("kubectl explain %s printed no description:\n%s", path, out)
		}
		desc := out[strings.Index(out, "DESCRIPTION:")+len("DESCRIPTION:"):]
		if end := strings.Index(desc, "FIELDS:"); end >= 0 {
			desc = desc[:end]
		}
		if strings.TrimSpace(desc) == "" || strings.Contains(desc, "<empty>") {
			t.Errorf("kubectl explain %s: empty description:\n%s", path, out)
		}
	}
}

func waitForExplain(t *testing.T, kubectl, kubeconfig, path string) {
	t.Helper()
	deadline := time.Now().Add(openAPIPublishTimeout)
	for {
		cmd := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", kubeconfig, "explain", path)
		out, err := cmd.CombinedOutput()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl explain %s still failing after %s: %v\n%s", path, openAPIPublishTimeout, err, out)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(openAPIPollInterval):
		}
	}
}

const (
	openAPIPublishTimeout = 60 * time.Second
	openAPIPollInterval   = 500 * time.Millisecond
)

func explain(ctx context.Context, t *testing.T, kubectl, kubeconfig, path string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "explain", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl explain %s: %v\n%s", path, err, stderr.String())
	}
	return stdout.String()
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}
