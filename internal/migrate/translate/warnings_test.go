package translate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// warning is a finding's code and field.
type warning struct {
	code  translate.Code
	field string
}

// Each case changes a healthy plaintext cluster and lists the findings it adds to the two every
// such cluster has (PeerAutoTLS, SecurityContextRestricted), field by field.
func TestWarnings(t *testing.T) {
	t.Parallel()
	podTemplate := func(in *translate.Input, f func(*corev1.PodSpec)) { f(&in.Cluster.Spec.PodTemplate.Spec) }
	for name, tc := range map[string]struct {
		opts   legacyfixture.Options
		cfg    translate.Config
		mutate func(*translate.Input)
		want   []warning
		check  func(testing.TB, *translate.Result)
	}{
		"fewer members run than the spec asks for": {
			mutate: func(in *translate.Input) { in.Cluster.Spec.Replicas = ptr.To(int32(5)) },
			want:   []warning{{translate.WarnReplicasDiffer, "spec.replicas"}},
			check:  checkRunningReplicas,
		},
		"another image repository": {cfg: translate.Config{ImageRepository: "registry.example.com/etcd"},
			want: []warning{{translate.WarnImageRepository, "spec.podTemplate.spec.containers[etcd].image"}}},
		"untyped options": {opts: legacyfixture.Options{Options: map[string]string{"enable-v2": "false", "debug": "", "snapshot-count": "50000"}},
			want:  []warning{{translate.WarnOptionDropped, "spec.options.debug"}, {translate.WarnOptionDropped, "spec.options.enable-v2"}},
			check: checkOptionOrder},
		"pod template fields": {mutate: func(in *translate.Input) {
			podTemplate(in, func(ps *corev1.PodSpec) {
				ps.HostNetwork = true
				ps.NodeSelector = map[string]string{"disk": "ssd"}
				ps.PriorityClassName = "high"
				ps.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
				ps.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(0)), FSGroup: ptr.To(int64(2000)), Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
				ps.Containers = []corev1.Container{
					{Name: "etcd", Env: []corev1.EnvVar{{Name: "GOMAXPROCS", Value: "2"}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}},
					{Name: "backup-sidecar", Image: "example/sidecar"},
				}
				ps.InitContainers = []corev1.Container{{Name: "fix-perms", Image: "busybox"}}
			})
			in.Cluster.Spec.PodTemplate.Labels = map[string]string{"team": "storage", "etcd-operator.cozystack.io/role": "x"}
		}, want: []warning{
			{translate.WarnMetadataKeyDropped, "spec.podTemplate.metadata.labels.etcd-operator.cozystack.io/role"},
			{translate.WarnPodTemplateDropped, "spec.podTemplate.spec.containers[backup-sidecar]"},
			{translate.WarnPodTemplateDropped, "spec.podTemplate.spec.containers[etcd].env"},
			{translate.WarnPodTemplateDropped, "spec.podTemplate.spec.hostNetwork"},
			{translate.WarnPodTemplateDropped, "spec.podTemplate.spec.initContainers"},
			{translate.WarnPodTemplateDropped, "spec.podTemplate.spec.securityContext.runAsUser"},
			{translate.WarnPodTemplateDropped, "spec.podTemplate.spec.securityContext.sysctls"},
		}, check: checkPodTemplate},
		"a stricter legacy PDB": {mutate: func(in *translate.Input) {
			in.Cluster.Spec.PodDisruptionBudgetTemplate = &legacy.EmbeddedPodDisruptionBudget{Spec: legacy.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
		}, want: []warning{{translate.WarnPDBStricter, "spec.podDisruptionBudgetTemplate"}}},
		"the legacy default PDB is not stricter": {opts: legacyfixture.Options{PDB: true}},
		"a PDB of 100 % minAvailable": {mutate: func(in *translate.Input) {
			in.Cluster.Spec.PodDisruptionBudgetTemplate = &legacy.EmbeddedPodDisruptionBudget{Spec: legacy.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromString("100%"))}}
		}, want: []warning{{translate.WarnPDBStricter, "spec.podDisruptionBudgetTemplate"}}},
		"release labels on the headless Service": {mutate: func(in *translate.Input) {
			in.HeadlessService.Labels["app.kubernetes.io/managed-by"] = "Helm"
			in.HeadlessService.Annotations = map[string]string{"meta.helm.sh/release-name": "etcd"}
		}, want: []warning{{translate.WarnReleaseLabels, "Service etcd-headless"}}},
		"a restore section": {mutate: func(in *translate.Input) {
			in.Cluster.Spec.Bootstrap = &legacy.BootstrapSpec{Restore: &legacy.RestoreSpec{Source: legacy.BackupDestination{PVC: &legacy.PVCBackupDestination{ClaimName: "b"}}}}
		}, want: []warning{{translate.WarnRestoreDropped, "spec.bootstrap.restore"}}},
		"an unauthenticated LoadBalancer under another name": {mutate: func(in *translate.Input) {
			in.Cluster.Spec.ServiceTemplate = &legacy.EmbeddedService{
				EmbeddedObjectMetadata: legacy.EmbeddedObjectMetadata{Name: "etcd-lb", Labels: map[string]string{"expose": "yes"},
					Annotations: map[string]string{"lb.example.com/internal": "true"}},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}},
			}
		}, want: []warning{
			{translate.WarnClientServiceKept, "Service etcd-lb"},
			{translate.WarnServiceTemplateDropped, "spec.serviceTemplate.metadata.labels.expose"},
			{translate.WarnServiceTemplateDropped, "spec.serviceTemplate.spec.loadBalancerSourceRanges"},
			{translate.WarnUnauthenticatedExposed, "spec.serviceTemplate.spec.type"},
		}, check: checkClientService},
		"no quota flag on a small volume": {opts: legacyfixture.Options{StorageSize: resource.MustParse("1Gi")}, mutate: func(in *translate.Input) {
			c := &in.StatefulSet.Spec.Template.Spec.Containers[0]
			c.Args = c.Args[:len(c.Args)-1] // the implicit quota is the last flag
		}, want: []warning{{translate.WarnQuotaChanged, "spec.options.quota-backend-bytes"}}},
		"ReadWriteOncePod volumes": {mutate: func(in *translate.Input) {
			in.Cluster.Spec.Storage.VolumeClaimTemplate.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
		}, want: []warning{{translate.WarnAccessModes, "spec.storage.volumeClaimTemplate.spec.accessModes"}}},
		"PVCs in two classes": {mutate: func(in *translate.Input) { in.PVCs[2].Spec.StorageClassName = ptr.To("fast") },
			want: []warning{{translate.WarnStorageClassDiffers, "PersistentVolumeClaims"}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := tc.opts
			o.Formed = true
			in, _ := inspected(t, o, tc.cfg)
			if tc.mutate != nil {
				tc.mutate(&in)
			}
			r := translate.Translate(in)
			if r.Refused() {
				t.Fatalf("refused: %+v", r.Refusals)
			}
			got := []warning{}
			for _, f := range r.Warnings {
				if f.Code != translate.WarnPeerAutoTLS && f.Code != translate.WarnSecurityContext {
					got = append(got, warning{f.Code, f.Field})
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(warning{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s\n%+v", diff, r.Warnings)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestExpandedVolumesSetTheSize(t *testing.T) {
	t.Parallel()
	in, _ := inspected(t, legacyfixture.Options{Formed: true}, translate.Config{})
	in.PVCs[1].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("8Gi")
	r := translate.Translate(in)
	if got := r.Cluster.Spec.Storage.Size.String(); got != "8Gi" {
		t.Errorf("storage.size = %s, want the largest PVC's 8Gi", got)
	}
}

func checkRunningReplicas(tb testing.TB, r *translate.Result) {
	tb.Helper()
	if *r.Cluster.Spec.Replicas != 3 {
		tb.Errorf("replicas %d, want the 3 that run", *r.Cluster.Spec.Replicas)
	}
}

func checkOptionOrder(tb testing.TB, r *translate.Result) {
	tb.Helper()
	if got := *r.Cluster.Spec.Options.SnapshotCount; got != 50000 {
		tb.Errorf("snapshotCount %d, want the option's 50000 (it comes after the implicit default)", got)
	}
}

func checkPodTemplate(tb testing.TB, r *translate.Result) {
	tb.Helper()
	s := r.Cluster.Spec
	if s.NodeSelector["disk"] != "ssd" || s.PriorityClassName != "high" || len(s.Tolerations) != 1 ||
		s.Resources.Requests.Cpu().String() != "250m" || *s.PodSecurityContext.FSGroup != 2000 || s.PodSecurityContext.RunAsUser != nil {
		tb.Errorf("spec = %+v", s)
	}
	if diff := cmp.Diff(&etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "storage"}}, s.AdditionalMetadata); diff != "" {
		tb.Errorf("additionalMetadata (-want +got):\n%s", diff)
	}
}

func checkClientService(tb testing.TB, r *translate.Result) {
	tb.Helper()
	want := &etcdv1alpha2.ClientServiceSpec{Type: etcdv1alpha2.ClientServiceType("LoadBalancer"), AllowUnauthenticated: true,
		Annotations: map[string]string{"lb.example.com/internal": "true"}}
	if diff := cmp.Diff(want, r.Cluster.Spec.ClientService); diff != "" {
		tb.Errorf("clientService (-want +got):\n%s", diff)
	}
}
