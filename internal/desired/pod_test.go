package desired

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// TestPodGolden pins the complete Pod of a plain 3.6 voter, so that any change to the template is
// a visible diff in review.
func TestPodGolden(t *testing.T) {
	t.Parallel()
	m := newMember()
	got := Pod(m, Inputs{State: ClusterStateNew})

	want := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "main-x7k2p",
			Namespace: "prod",
			Labels: map[string]string{
				"app.kubernetes.io/name":             "etcd",
				"app.kubernetes.io/instance":         "main",
				"app.kubernetes.io/managed-by":       "etcd-operator",
				"app.kubernetes.io/component":        "main-x7k2p",
				"etcd-operator.cozystack.io/cluster": "main",
				"etcd-operator.cozystack.io/role":    "voter",
			},
			Annotations: map[string]string{
				"etcd-operator.cozystack.io/template-hash": TemplateHash(&m.Spec, Images{Etcd: "quay.io/coreos/etcd:v3.6.5"}, CADigests{}),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "etcd-operator.cozystack.io/v1alpha2",
				Kind:               "EtcdMember",
				Name:               "main-x7k2p",
				UID:                "member-uid-1",
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			Hostname:    "main-x7k2p",
			Subdomain:   "main",
			HostAliases: []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: []string{"main-x7k2p.main.prod.svc"}}},
			Containers: []corev1.Container{{
				Name:            "etcd",
				Image:           "quay.io/coreos/etcd:v3.6.5",
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/usr/local/bin/etcd"},
				Args: append(append([]string(nil), commonFlags...),
					"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"),
				Ports: []corev1.ContainerPort{
					{Name: "client", ContainerPort: 2379, Protocol: corev1.ProtocolTCP},
					{Name: "peer", ContainerPort: 2380, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 2381, Protocol: corev1.ProtocolTCP},
				},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
				StartupProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/livez", Port: intstr.FromInt32(2381), Scheme: corev1.URISchemeHTTP,
					}},
					PeriodSeconds: 1, TimeoutSeconds: 5, SuccessThreshold: 1, FailureThreshold: 600,
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/livez", Port: intstr.FromInt32(2381), Scheme: corev1.URISchemeHTTP,
					}},
					PeriodSeconds: 10, TimeoutSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3,
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/readyz", Port: intstr.FromInt32(2381), Scheme: corev1.URISchemeHTTP,
					}},
					PeriodSeconds: 1, TimeoutSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3,
				},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					RunAsNonRoot:             ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: []corev1.Volume{{
				Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: "data-main-x7k2p",
				}},
			}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:        ptr.To(true),
				RunAsUser:           ptr.To[int64](65532),
				RunAsGroup:          ptr.To[int64](65532),
				FSGroup:             ptr.To[int64](65532),
				FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
				SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
							"etcd-operator.cozystack.io/cluster": "main",
						}},
						TopologyKey: "kubernetes.io/hostname",
					},
				}},
			}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Pod mismatch (-want +got):\n%s", diff)
	}
}

func TestPodProbesPerVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version                     string
		startup                     bool
		livenessTCP                 bool
		livenessPath, readinessPath string
	}{
		{"3.5.0", false, true, "", "/health"},
		{"3.5.10", false, true, "", "/health"},
		{"3.5.11", true, false, "/livez", "/readyz"},
		{"3.5.21", true, false, "/livez", "/readyz"},
		{"3.6.0", true, false, "/livez", "/readyz"},
		{"3.7.3", true, false, "/livez", "/readyz"},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			c := Pod(newMember(func(m *etcdv1alpha2.EtcdMember) { m.Spec.Version = tc.version }), Inputs{}).Spec.Containers[0]
			if (c.StartupProbe != nil) != tc.startup {
				t.Errorf("startup probe present = %v, want %v", c.StartupProbe != nil, tc.startup)
			}
			if tc.startup && (c.StartupProbe.HTTPGet.Path != "/livez" || c.StartupProbe.FailureThreshold*c.StartupProbe.PeriodSeconds != 600) {
				t.Errorf("startup probe = %+v", c.StartupProbe)
			}
			if tc.livenessTCP {
				want := &corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(2380)}},
					InitialDelaySeconds: 15, PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
				}
				if diff := cmp.Diff(want, c.LivenessProbe); diff != "" {
					t.Errorf("legacy liveness mismatch (-want +got):\n%s", diff)
				}
				wantReady := &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/health", Port: intstr.FromInt32(2381), Scheme: corev1.URISchemeHTTP,
					}},
					InitialDelaySeconds: 5, PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
				}
				if diff := cmp.Diff(wantReady, c.ReadinessProbe); diff != "" {
					t.Errorf("legacy readiness mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if c.LivenessProbe.HTTPGet.Path != tc.livenessPath || c.ReadinessProbe.HTTPGet.Path != tc.readinessPath {
				t.Errorf("probes = %s / %s, want %s / %s", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path, tc.livenessPath, tc.readinessPath)
			}
		})
	}
}

func TestPodStorageAndTLSVolumes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		mut         func(*etcdv1alpha2.EtcdMember)
		wantVolumes []corev1.Volume
		wantMounts  []corev1.VolumeMount
	}{
		{
			name: "memory medium",
			mut: func(m *etcdv1alpha2.EtcdMember) {
				m.Spec.Storage = storageSpec("512Mi", etcdv1alpha2.StorageMediumMemory)
			},
			wantVolumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("512Mi")),
			}}}},
			wantMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
		},
		{
			name: "client and peer Secrets",
			mut: func(m *etcdv1alpha2.EtcdMember) {
				m.Spec.TLS = &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("main-server-tls"), ClientMTLS: true, PeerSecretRef: ref("main-peer-tls")}
			},
			wantVolumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-main-x7k2p"}}},
				{Name: "client-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "main-server-tls", DefaultMode: ptr.To[int32](0o440)}}}, //nolint:gosec // G101: a Secret name, not Secret data
				{Name: "peer-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "main-peer-tls", DefaultMode: ptr.To[int32](0o440)}}},     //nolint:gosec // G101: a Secret name, not Secret data
			},
			wantMounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/var/lib/etcd"},
				{Name: "client-tls", MountPath: "/etc/etcd/tls/client", ReadOnly: true},
				{Name: "peer-tls", MountPath: "/etc/etcd/tls/peer", ReadOnly: true},
			},
		},
		{
			name: "peer auto TLS mounts nothing",
			mut:  func(m *etcdv1alpha2.EtcdMember) { m.Spec.TLS = &etcdv1alpha2.EtcdMemberTLS{PeerAutoTLS: true} },
			wantVolumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-main-x7k2p"}}},
			},
			wantMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := Pod(newMember(tc.mut), Inputs{})
			if diff := cmp.Diff(tc.wantVolumes, p.Spec.Volumes); diff != "" {
				t.Errorf("volumes mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMounts, p.Spec.Containers[0].VolumeMounts); diff != "" {
				t.Errorf("mounts mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodSchedulingPassthrough(t *testing.T) {
	t.Parallel()
	nodeAffinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}},
		}}},
	}}
	tsc := []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{etcdv1alpha2.LabelCluster: "main"}},
	}}
	tolerations := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "etcd", Effect: corev1.TaintEffectNoSchedule}}

	tests := []struct {
		name string
		mut  func(*etcdv1alpha2.EtcdMember)
		want func(t *testing.T, p *corev1.Pod)
	}{
		{"nil affinity is the default anti-affinity", func(*etcdv1alpha2.EtcdMember) {}, func(t *testing.T, p *corev1.Pod) {
			t.Helper()
			terms := p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
			if len(terms) != 1 || terms[0].Weight != 100 || terms[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
				t.Errorf("default affinity = %+v", p.Spec.Affinity)
			}
		}},
		{"empty affinity disables the default", func(m *etcdv1alpha2.EtcdMember) { m.Spec.Affinity = &corev1.Affinity{} }, func(t *testing.T, p *corev1.Pod) {
			t.Helper()
			if p.Spec.Affinity != nil {
				t.Errorf("affinity = %+v, want none", p.Spec.Affinity)
			}
		}},
		{"explicit affinity replaces the default", func(m *etcdv1alpha2.EtcdMember) { m.Spec.Affinity = nodeAffinity }, func(t *testing.T, p *corev1.Pod) {
			t.Helper()
			if diff := cmp.Diff(nodeAffinity, p.Spec.Affinity); diff != "" {
				t.Errorf("affinity mismatch (-want +got):\n%s", diff)
			}
		}},
		{"spread, selector, tolerations, priority", func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.TopologySpreadConstraints = tsc
			m.Spec.NodeSelector = map[string]string{"pool": "etcd"}
			m.Spec.Tolerations = tolerations
			m.Spec.PriorityClassName = "system-cluster-critical"
			m.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		}, func(t *testing.T, p *corev1.Pod) {
			t.Helper()
			if diff := cmp.Diff(tsc, p.Spec.TopologySpreadConstraints); diff != "" {
				t.Errorf("TSC mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{"pool": "etcd"}, p.Spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tolerations, p.Spec.Tolerations); diff != "" {
				t.Errorf("tolerations mismatch (-want +got):\n%s", diff)
			}
			if p.Spec.PriorityClassName != "system-cluster-critical" {
				t.Errorf("priorityClassName = %q", p.Spec.PriorityClassName)
			}
			if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "regcred"}}, p.Spec.ImagePullSecrets); diff != "" {
				t.Errorf("imagePullSecrets mismatch (-want +got):\n%s", diff)
			}
		}},
		{"resources are passed through", func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}
		}, func(t *testing.T, p *corev1.Pod) {
			t.Helper()
			want := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}
			if diff := cmp.Diff(want, p.Spec.Containers[0].Resources); diff != "" {
				t.Errorf("resources mismatch (-want +got):\n%s", diff)
			}
		}},
		{"headless-service-name sets the subdomain", func(m *etcdv1alpha2.EtcdMember) {
			m.Annotations = map[string]string{etcdv1alpha2.AnnotationHeadlessServiceName: "legacy-headless"}
		}, func(t *testing.T, p *corev1.Pod) {
			t.Helper()
			if p.Spec.Subdomain != "legacy-headless" || p.Spec.Hostname != testMemberName {
				t.Errorf("hostname/subdomain = %s/%s", p.Spec.Hostname, p.Spec.Subdomain)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.want(t, Pod(newMember(tc.mut), Inputs{}))
		})
	}
	if got := Pod(newMember(), Inputs{ImageRepository: "registry.local/etcd"}).Spec.Containers[0].Image; got != "registry.local/etcd:v3.6.5" {
		t.Errorf("image = %q", got)
	}
}

func TestPodMetadata(t *testing.T) {
	t.Parallel()
	m := newMember(func(m *etcdv1alpha2.EtcdMember) {
		m.Status.IsVoter = false
		m.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{
			Labels: map[string]string{
				"team":                            "db",
				etcdv1alpha2.LabelInstance:        "hijack",
				etcdv1alpha2.LabelRole:            etcdv1alpha2.RoleVoter,
				etcdv1alpha2.ReservedPrefix + "x": "y",
			},
			Annotations: map[string]string{
				"backup":                            "daily",
				etcdv1alpha2.AnnotationTemplateHash: "forged",
			},
		}
	})
	p := Pod(m, Inputs{})
	wantLabels := map[string]string{
		"team":                      "db",
		etcdv1alpha2.LabelName:      "etcd",
		etcdv1alpha2.LabelInstance:  "main",
		etcdv1alpha2.LabelManagedBy: "etcd-operator",
		etcdv1alpha2.LabelCluster:   "main",
		etcdv1alpha2.LabelComponent: testMemberName,
	}
	if diff := cmp.Diff(wantLabels, p.Labels); diff != "" {
		t.Errorf("learner labels mismatch (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{
		"backup":                            "daily",
		etcdv1alpha2.AnnotationTemplateHash: TemplateHash(&m.Spec, MemberImages("", m.Spec.Version, ""), CADigests{}),
	}
	if diff := cmp.Diff(wantAnnotations, p.Annotations); diff != "" {
		t.Errorf("annotations mismatch (-want +got):\n%s", diff)
	}
}

// TestPodSharesNoMemory guards against a builder that aliases the member: a caller mutating the
// Pod (as server-side apply helpers do) must not change the cached EtcdMember.
func TestPodSharesNoMemory(t *testing.T) {
	t.Parallel()
	m := newMember(func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
		m.Spec.NodeSelector = map[string]string{"a": "b"}
		m.Spec.Tolerations = []corev1.Toleration{{Key: "k", TolerationSeconds: ptr.To[int64](5)}}
		m.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, MinDomains: ptr.To[int32](2)}}
		m.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		m.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{RunAsUser: ptr.To[int64](1000), SupplementalGroups: []int64{5}}
		m.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "r"}}
		m.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"l": "v"}}
	})
	before := m.DeepCopy()
	p := Pod(m, Inputs{})
	p.Spec.Affinity.NodeAffinity = nil
	p.Spec.NodeSelector["a"] = "x"
	*p.Spec.Tolerations[0].TolerationSeconds = 9
	*p.Spec.TopologySpreadConstraints[0].MinDomains = 9
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("9")
	*p.Spec.SecurityContext.RunAsUser = 9
	p.Spec.SecurityContext.SupplementalGroups[0] = 9
	p.Spec.ImagePullSecrets[0].Name = "x"
	p.Labels["l"] = "x"
	if diff := cmp.Diff(before, m); diff != "" {
		t.Errorf("mutating the Pod changed the member (-before +after):\n%s", diff)
	}
}

func TestPodSecurityContextOverrides(t *testing.T) {
	t.Parallel()
	se := &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c1,c2"}
	got := PodSecurityContext(&etcdv1alpha2.PodSecurityOverrides{
		RunAsUser:           ptr.To[int64](1001),
		RunAsGroup:          ptr.To[int64](1002),
		FSGroup:             ptr.To[int64](1003),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeAlways),
		SupplementalGroups:  []int64{4000, 4001},
		SELinuxOptions:      se,
	})
	want := &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To[int64](1001),
		RunAsGroup:          ptr.To[int64](1002),
		FSGroup:             ptr.To[int64](1003),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeAlways),
		SupplementalGroups:  []int64{4000, 4001},
		SELinuxOptions:      se,
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PodSecurityContext mismatch (-want +got):\n%s", diff)
	}
}
