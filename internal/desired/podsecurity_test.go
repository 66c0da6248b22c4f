package desired

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// restrictedEvaluator evaluates Pods against the Pod Security "restricted" level with the same
// library kube-apiserver's PodSecurity admission uses.
func restrictedEvaluator(t *testing.T) func(*corev1.Pod) []string {
	t.Helper()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatalf("building the Pod Security evaluator: %v", err)
	}
	lv := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	return func(p *corev1.Pod) []string {
		var failures []string
		for _, r := range evaluator.EvaluatePod(lv, &p.ObjectMeta, &p.Spec) {
			if !r.Allowed {
				failures = append(failures, r.ForbiddenReason+": "+r.ForbiddenDetail)
			}
		}
		return failures
	}
}

// secretCanary is planted in every Secret-bearing field of the fixtures; it must never surface
// in a Pod's environment or command line.
const secretCanary = "canary-7f3d9" //nolint:gosec // G101: a marker planted to detect leaks, not a credential

// podMatrix renders a member Pod for every combination of the spec options that change the Pod's
// shape: etcd version (flag spelling and probes), storage medium, TLS mode, security overrides,
// options and scheduling.
func podMatrix() map[string]*corev1.Pod {
	versions := []string{"3.5.4", "3.5.21", "3.6.5", "3.7.3"}
	media := []etcdv1alpha2.StorageMedium{etcdv1alpha2.StorageMediumDefault, etcdv1alpha2.StorageMediumMemory}
	tlsModes := map[string]*etcdv1alpha2.EtcdMemberTLS{
		"plain":         nil,
		"server":        {ClientServerSecretRef: ref("main-server-tls")},
		"mtls+peer":     {ClientServerSecretRef: ref("main-server-tls"), ClientMTLS: true, PeerSecretRef: ref("main-peer-tls")},
		"peer-auto-tls": {PeerAutoTLS: true},
	}
	securities := map[string]*etcdv1alpha2.PodSecurityOverrides{
		"default": nil,
		"overrides": {
			RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1001), FSGroup: ptr.To[int64](1002),
			FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeAlways), SupplementalGroups: []int64{4000},
			SELinuxOptions: &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c123,c456"},
		},
	}
	extras := map[string]func(*etcdv1alpha2.EtcdMember){
		"bare": func(*etcdv1alpha2.EtcdMember) {},
		"everything": func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Options = &etcdv1alpha2.EtcdOptions{
				QuotaBackendBytes: ptr.To[int64](4 << 30), AutoCompactionMode: etcdv1alpha2.AutoCompactionRevision,
				AutoCompactionRetention: "1000", SnapshotCount: ptr.To[int64](5000),
			}
			m.Spec.Affinity = &corev1.Affinity{}
			m.Spec.NodeSelector = map[string]string{"pool": "etcd"}
			m.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			m.Spec.PriorityClassName = "high"
			m.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
			m.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{
				Labels: map[string]string{"team": "db"}, Annotations: map[string]string{"note": "x"},
			}
			m.Annotations = map[string]string{
				etcdv1alpha2.AnnotationDataDirSubPath:      "default.etcd",
				etcdv1alpha2.AnnotationHeadlessServiceName: "legacy",
			}
			// Secret references that must never be rendered into the Pod.
			m.Spec.Restore = &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{
				Endpoint: "https://" + secretCanary, Bucket: secretCanary, Key: secretCanary,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: secretCanary},
			}}}
		},
	}

	pods := map[string]*corev1.Pod{}
	for _, v := range versions {
		for _, medium := range media {
			for tlsName, tls := range tlsModes {
				for secName, sec := range securities {
					for extraName, extra := range extras {
						m := newMember(func(m *etcdv1alpha2.EtcdMember) {
							m.Spec.Version = v
							m.Spec.Storage = storageSpec("2Gi", medium)
							m.Spec.TLS = tls.DeepCopy()
							m.Spec.PodSecurityContext = sec.DeepCopy()
						}, extra)
						name := fmt.Sprintf("%s/%s/%s/%s/%s", v, medium, tlsName, secName, extraName)
						pods[name] = Pod(m, Inputs{State: ClusterStateExisting, CADigests: CADigests{Client: "sha256:1", Peer: "sha256:2"}})
					}
				}
			}
		}
	}
	return pods
}

// TestPodsPassRestrictedPodSecurity runs every rendered Pod through the real Pod Security
// "restricted" policy, so member Pods run in namespaces that enforce it.
func TestPodsPassRestrictedPodSecurity(t *testing.T) {
	t.Parallel()
	evaluate := restrictedEvaluator(t)
	pods := podMatrix()
	if len(pods) < 100 {
		t.Fatalf("the matrix rendered only %d Pods", len(pods))
	}
	for name, p := range pods {
		if failures := evaluate(p); len(failures) > 0 {
			t.Errorf("%s violates Pod Security restricted:\n  %s", name, strings.Join(failures, "\n  "))
		}
	}
}

// TestRestrictedEvaluatorRejectsWeakenedPod proves the check above has teeth: the same Pod with
// one hardening setting removed must fail.
func TestRestrictedEvaluatorRejectsWeakenedPod(t *testing.T) {
	t.Parallel()
	evaluate := restrictedEvaluator(t)
	weakenings := map[string]func(*corev1.Pod){
		"runAsNonRoot unset": func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = nil
			p.Spec.Containers[0].SecurityContext.RunAsNonRoot = nil
		},
		"privilege escalation": func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil },
		"capabilities kept":    func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Capabilities = nil },
		"no seccomp profile":   func(p *corev1.Pod) { p.Spec.SecurityContext.SeccompProfile = nil },
		"root user":            func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr.To[int64](0) },
		"hostPath data volume": func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/etcd"}}
		},
	}
	for name, weaken := range weakenings {
		p := Pod(newMember(), Inputs{})
		weaken(p)
		if len(evaluate(p)) == 0 {
			t.Errorf("%s: the restricted policy accepted a weakened Pod", name)
		}
	}
}

// TestPodsCarryNoSecretMaterial: Secrets reach etcd only as read-only files from the TLS Secrets
// named in the member's TLS block, never through the environment or the command line.
func TestPodsCarryNoSecretMaterial(t *testing.T) {
	t.Parallel()
	for name, p := range podMatrix() {
		allowedSecrets := map[string]bool{"main-server-tls": true, "main-peer-tls": true}
		for _, v := range p.Spec.Volumes {
			if v.Secret != nil && !allowedSecrets[v.Secret.SecretName] {
				t.Errorf("%s mounts Secret %q, which is not a member TLS Secret", name, v.Secret.SecretName)
			}
			if v.Projected != nil || v.CSI != nil {
				t.Errorf("%s has an unexpected %s volume", name, v.Name)
			}
		}
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			if len(c.Env) > 0 || len(c.EnvFrom) > 0 {
				t.Errorf("%s: container %s has environment variables; Secret material must not travel through env", name, c.Name)
			}
			for _, arg := range append(append([]string(nil), c.Command...), c.Args...) {
				lower := strings.ToLower(arg)
				for _, bad := range []string{secretCanary, "-----begin", "password", "token=", "aws_", "secret"} {
					if strings.Contains(lower, bad) && !strings.HasPrefix(arg, "--initial-cluster-token=") {
						t.Errorf("%s: container %s argument %q contains %q", name, c.Name, arg, bad)
					}
				}
			}
		}
	}
}

// FuzzPod builds member Pods and PVCs from arbitrary spec values within what the API admits
// (IDs > 0, as its CEL rules require): the builders must never panic, every Pod must pass Pod
// Security restricted, its command line must hold the flag invariants, and its template hash must
// be deterministic.
func FuzzPod(f *testing.F) {
	f.Add("3.6.5", false, int64(1<<30), "", "", false, false, false, false, int64(0), int64(0), int64(0), false)
	f.Add("3.5.4", true, int64(64<<20), "default.etcd", "legacy", true, true, true, true, int64(1000), int64(1001), int64(1002), true)
	f.Add("x", true, int64(-1), "..", "UPPER", false, true, false, true, int64(-5), int64(0), int64(1<<40), false)
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		f.Fatal(err)
	}
	lv := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	f.Fuzz(func(t *testing.T, version string, memory bool, sizeBytes int64, subPath, headless string,
		clientTLS, clientMTLS, peerTLS, peerAutoTLS bool, uid, gid, fsGroup int64, emptyAffinity bool,
	) {
		m := newMember(func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Version = version
			medium := etcdv1alpha2.StorageMediumDefault
			if memory {
				medium = etcdv1alpha2.StorageMediumMemory
			}
			m.Spec.Storage = storageSpec("1Gi", medium)
			size := resource.NewQuantity(sizeBytes, resource.BinarySI).String()
			setSize(&m.Spec.Storage, size)
			m.Annotations = map[string]string{
				etcdv1alpha2.AnnotationDataDirSubPath:      subPath,
				etcdv1alpha2.AnnotationHeadlessServiceName: headless,
			}
			m.Spec.TLS = &etcdv1alpha2.EtcdMemberTLS{ClientMTLS: clientMTLS, PeerAutoTLS: peerAutoTLS}
			if clientTLS {
				m.Spec.TLS.ClientServerSecretRef = ref("s")
			}
			if peerTLS {
				m.Spec.TLS.PeerSecretRef = ref("p")
			}
			o := &etcdv1alpha2.PodSecurityOverrides{}
			if uid > 0 {
				o.RunAsUser = &uid
			}
			if gid > 0 {
				o.RunAsGroup = &gid
			}
			if fsGroup > 0 {
				o.FSGroup = &fsGroup
			}
			m.Spec.PodSecurityContext = o
			if emptyAffinity {
				m.Spec.Affinity = &corev1.Affinity{}
			}
		})
		p := Pod(m, Inputs{})
		_ = PVC(m, newCluster())
		for _, r := range evaluator.EvaluatePod(lv, &p.ObjectMeta, &p.Spec) {
			if !r.Allowed {
				t.Fatalf("Pod violates restricted: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
			}
		}
		checkFlags(t, p.Spec.Containers[0].Args)
		if again := Pod(m, Inputs{}); again.Annotations[etcdv1alpha2.AnnotationTemplateHash] != p.Annotations[etcdv1alpha2.AnnotationTemplateHash] {
			t.Fatal("template hash is not deterministic")
		}
	})
}
