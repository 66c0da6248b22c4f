package desired

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// hashFieldClasses classifies every field of EtcdMemberSpec. A field added to the API without
// being classified here fails TestTemplateHashClassifiesEverySpecField, so that nobody forgets
// to decide whether it restarts members.
var hashFieldClasses = map[string]string{
	"ClusterName":               "restart", // through the default anti-affinity's selector
	"Version":                   "restart",
	"Storage":                   "restart", // medium, Memory size, and size through the default quota
	"Resources":                 "restart",
	"Affinity":                  "restart",
	"TopologySpreadConstraints": "restart",
	"Options":                   "restart",
	"NodeSelector":              "restart",
	"Tolerations":               "restart",
	"PriorityClassName":         "restart",
	"PodSecurityContext":        "restart",
	"TLS":                       "restart",
	"ImagePullSecrets":          "in-place",
	"AdditionalMetadata":        "in-place",
	"Bootstrap":                 "ignored",
	"InitialCluster":            "ignored",
	"ClusterToken":              "ignored",
	"Replicas":                  "ignored",
	"Dormant":                   "ignored",
	"Restore":                   "ignored",
}

func TestTemplateHashClassifiesEverySpecField(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[etcdv1alpha2.EtcdMemberSpec]()
	for i := range typ.NumField() {
		if _, ok := hashFieldClasses[typ.Field(i).Name]; !ok {
			t.Errorf("EtcdMemberSpec.%s is not classified for the template hash; add it to TemplateHash or to the in-place list",
				typ.Field(i).Name)
		}
	}
}

// hashMember is a member with a value in every restart-relevant field, so that each mutation
// below changes something real.
func hashMember() *etcdv1alpha2.EtcdMember {
	return newMember(func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.Storage = storageSpec("1Gi", "")
		m.Spec.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
		m.Spec.Options = &etcdv1alpha2.EtcdOptions{
			AutoCompactionMode:      etcdv1alpha2.AutoCompactionPeriodic,
			AutoCompactionRetention: "1h",
			SnapshotCount:           ptr.To[int64](10000),
		}
		m.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
		}}
		m.Spec.NodeSelector = map[string]string{"pool": "etcd", "disk": "ssd"}
		m.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "etcd"}}
		m.Spec.PriorityClassName = "high"
		m.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{SupplementalGroups: []int64{4000}}
		m.Spec.TLS = &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("main-server-tls"), PeerSecretRef: ref("main-peer-tls")}
		m.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		m.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "db"}}
	})
}

var (
	hashImages = MemberImages("", "3.6.5", testGuardImage)
	hashCAs    = CADigests{Client: "sha256:aaaa", Peer: "sha256:bbbb"}
)

func TestTemplateHashShape(t *testing.T) {
	t.Parallel()
	h := TemplateHash(&hashMember().Spec, hashImages, hashCAs)
	if !regexp.MustCompile(`^[0-9a-f]{20}$`).MatchString(h) {
		t.Errorf("TemplateHash = %q, want 20 lowercase hex digits", h)
	}
}

// TestTemplateHashChangesWithEveryRestartRelevantField mutates one restart-relevant input at a
// time; each must give a new hash.
func TestTemplateHashChangesWithEveryRestartRelevantField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		mut   func(*etcdv1alpha2.EtcdMember)
		image *Images
		ca    *CADigests
	}{
		{name: "version", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Version = "3.6.6" }},
		{name: "image repository", image: &Images{Etcd: Image("registry.local/etcd", "3.6.5"), Guard: testGuardImage}},
		{name: "guard image", image: &Images{Etcd: hashImages.Etcd, Guard: "registry.example/etcd-operator:v2"}},
		{name: "no guard image", image: &Images{Etcd: hashImages.Etcd}},
		{name: "CPU request", mut: func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("300m")
		}},
		{name: "memory limit", mut: func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("2Gi")
		}},
		{name: "resources back to defaults", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Resources = corev1.ResourceRequirements{} }},
		{name: "explicit quota", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Options.QuotaBackendBytes = ptr.To[int64](3 << 30) }},
		{name: "quota 0 (etcd default)", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Options.QuotaBackendBytes = ptr.To[int64](0) }},
		{name: "compaction mode", mut: func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Options.AutoCompactionMode = etcdv1alpha2.AutoCompactionRevision
		}},
		{name: "compaction retention", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Options.AutoCompactionRetention = "2h" }},
		{name: "snapshot count", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Options.SnapshotCount = ptr.To[int64](20000) }},
		{name: "options removed", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Options = nil }},
		{name: "PVC size moves the default quota", mut: func(m *etcdv1alpha2.EtcdMember) { setSize(&m.Spec.Storage, "2Gi") }},
		{name: "medium", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory }},
		{name: "affinity {} disables the default", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Affinity = &corev1.Affinity{} }},
		{name: "explicit affinity", mut: func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}},
			}}
		}},
		{name: "cluster name changes the default affinity", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.ClusterName = "other" }},
		{name: "topology spread skew", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.TopologySpreadConstraints[0].MaxSkew = 2 }},
		{name: "topology spread removed", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.TopologySpreadConstraints = nil }},
		{name: "node selector value", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.NodeSelector["disk"] = "hdd" }},
		{name: "node selector key", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.NodeSelector["zone"] = "a" }},
		{name: "toleration", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Tolerations[0].Effect = corev1.TaintEffectNoExecute }},
		{name: "tolerations removed", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.Tolerations = nil }},
		{name: "priority class", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.PriorityClassName = "low" }},
		{name: "runAsUser", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.PodSecurityContext.RunAsUser = ptr.To[int64](1000) }},
		{name: "runAsGroup", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.PodSecurityContext.RunAsGroup = ptr.To[int64](1000) }},
		{name: "fsGroup", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.PodSecurityContext.FSGroup = ptr.To[int64](1000) }},
		{name: "fsGroupChangePolicy", mut: func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.PodSecurityContext.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeAlways)
		}},
		{name: "supplementalGroups", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.PodSecurityContext.SupplementalGroups = []int64{4001} }},
		{name: "seLinuxOptions", mut: func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.PodSecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c1,c2"}
		}},
		{name: "client Secret", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.TLS.ClientServerSecretRef = ref("other") }},
		{name: "client mTLS", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.TLS.ClientMTLS = true }},
		{name: "peer Secret", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.TLS.PeerSecretRef = ref("other") }},
		{name: "peer auto TLS", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.TLS.PeerAutoTLS = true }},
		{name: "TLS removed", mut: func(m *etcdv1alpha2.EtcdMember) { m.Spec.TLS = nil }},
		{name: "client CA digest", ca: &CADigests{Client: "sha256:cccc", Peer: hashCAs.Peer}},
		{name: "peer CA digest", ca: &CADigests{Client: hashCAs.Client, Peer: "sha256:cccc"}},
	}
	base := TemplateHash(&hashMember().Spec, hashImages, hashCAs)
	seen := map[string]string{base: "base"}
	for _, tc := range tests {
		m := hashMember()
		if tc.mut != nil {
			tc.mut(m)
		}
		image, ca := hashImages, hashCAs
		if tc.image != nil {
			image = *tc.image
		}
		if tc.ca != nil {
			ca = *tc.ca
		}
		got := TemplateHash(&m.Spec, image, ca)
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: hash %s equals the hash of %q; the change would not restart members", tc.name, got, prev)
		}
		seen[got] = tc.name
	}
}

// TestTemplateHashMemorySize: tmpfs size is part of a Memory member's Pod, so it restarts
// (surge-replaces) members even where the quota stays capped.
func TestTemplateHashMemorySize(t *testing.T) {
	t.Parallel()
	m := newMember(func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.Storage = storageSpec("8Gi", etcdv1alpha2.StorageMediumMemory)
	})
	before := TemplateHash(&m.Spec, hashImages, CADigests{})
	setSize(&m.Spec.Storage, "16Gi")
	if after := TemplateHash(&m.Spec, hashImages, CADigests{}); after == before {
		t.Error("a Memory member's size changed but its hash did not")
	}
}

// TestTemplateHashGuardImage: the guard image restarts exactly the members that run the guard.
// A PVC member's hash follows it, so an operator image change rolls PVC members (and gives the
// guard to those built before it existed); so does a Memory member's, which runs the guard since
// quorum-loss recovery needs it; and without a guard image the hash is the one computed before the guard entered
// the hash (golden values from that release), so such an operator restarts nobody.
func TestTemplateHashGuardImage(t *testing.T) {
	t.Parallel()
	pvc := hashMember()
	memory := hashMember()
	memory.Spec.Storage = storageSpec("1Gi", etcdv1alpha2.StorageMediumMemory)
	etcd := Image("", "3.6.5")
	hash := func(m *etcdv1alpha2.EtcdMember, guard string) string {
		return TemplateHash(&m.Spec, Images{Etcd: etcd, Guard: guard}, hashCAs)
	}
	const v1, v2 = "registry.example/etcd-operator:v1", "registry.example/etcd-operator:v2"

	if hash(pvc, v1) == hash(pvc, v2) {
		t.Error("PVC member: a new guard image left the hash unchanged; an operator upgrade would not reach running members")
	}
	if hash(pvc, v1) == hash(pvc, "") {
		t.Error("PVC member: adding the guard left the hash unchanged; members built before the guard would never get it")
	}
	// Memory members run the guard too, for quorum-loss recovery (docs/design/quorum-recovery.md).
	if hash(memory, v1) == hash(memory, v2) || hash(memory, v1) == hash(memory, "") {
		t.Error("Memory member: the guard image left the hash unchanged; an operator upgrade would not reach its guard")
	}
	for _, tc := range []struct {
		name   string
		member *etcdv1alpha2.EtcdMember
		want   string
	}{
		{"PVC member", pvc, "d0e4f00a038b471ffb1c"},
		{"Memory member", memory, "f15cd8742537e4630b48"},
	} {
		if got := hash(tc.member, ""); got != tc.want {
			t.Errorf("%s without a guard image: hash %s, want %s as before the guard was hashed", tc.name, got, tc.want)
		}
	}
}

// TestTemplateHashIgnoresInPlaceFields: changes applied in place, or meaningful only once, must
// not restart anyone; neither must spelling out a default.
func TestTemplateHashIgnoresInPlaceFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		prep func(*etcdv1alpha2.EtcdMember) // optional, before the "before" hash
		mut  func(*etcdv1alpha2.EtcdMember)
	}{
		{"additional labels", nil, func(m *etcdv1alpha2.EtcdMember) { m.Spec.AdditionalMetadata.Labels["x"] = "y" }},
		{"additional annotations", nil, func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.AdditionalMetadata.Annotations = map[string]string{"a": "b"}
		}},
		{"additional metadata removed", nil, func(m *etcdv1alpha2.EtcdMember) { m.Spec.AdditionalMetadata = nil }},
		{"image pull secrets", nil, func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.ImagePullSecrets = append(m.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: "other"})
		}},
		{"initial cluster", nil, func(m *etcdv1alpha2.EtcdMember) { m.Spec.InitialCluster += ",b=http://b:2380" }},
		{"cluster token", nil, func(m *etcdv1alpha2.EtcdMember) { m.Spec.ClusterToken = "other" }},
		{"bootstrap", nil, func(m *etcdv1alpha2.EtcdMember) { m.Spec.Bootstrap = true }},
		{"dormant", nil, func(m *etcdv1alpha2.EtcdMember) { m.Spec.Dormant = true }},
		{"restore", nil, func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Restore = &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.SnapshotLocation{
				PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "s.db"},
			}}
		}},
		{"storage class", nil, func(m *etcdv1alpha2.EtcdMember) { m.Spec.Storage.StorageClassName = ptr.To("fast") }},
		{"reclaim policy", nil, func(m *etcdv1alpha2.EtcdMember) { m.Spec.Storage.ReclaimPolicy = etcdv1alpha2.ReclaimPolicyRetain }},
		{"member status", nil, func(m *etcdv1alpha2.EtcdMember) { m.Status.IsVoter = false; m.Status.MemberID = "abc" }},
		{"metadata", nil, func(m *etcdv1alpha2.EtcdMember) {
			m.Annotations = map[string]string{etcdv1alpha2.AnnotationTemplateHash: "x"}
			m.Labels = map[string]string{"l": "v"}
			m.ResourceVersion = "42"
			m.Generation = 7
		}},
		{"empty maps and lists are absent ones", func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.NodeSelector = map[string]string{}
			m.Spec.Tolerations = []corev1.Toleration{}
			m.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{}
		}, func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.NodeSelector = nil
			m.Spec.Tolerations = nil
			m.Spec.TopologySpreadConstraints = nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := hashMember()
			if tc.prep != nil {
				tc.prep(m)
			}
			before := TemplateHash(&m.Spec, hashImages, hashCAs)
			tc.mut(m)
			if after := TemplateHash(&m.Spec, hashImages, hashCAs); after != before {
				t.Errorf("hash changed from %s to %s", before, after)
			}
		})
	}
}

// TestTemplateHashEffectiveValues: writing out what the operator would use anyway must not
// restart members.
func TestTemplateHashEffectiveValues(t *testing.T) {
	t.Parallel()
	implicit := newMember()
	explicit := newMember(func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("0.1"), corev1.ResourceMemory: resource.MustParse("131072Ki"),
		}}
		m.Spec.Options = &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](512 << 20)}
		m.Spec.Affinity = EffectiveAffinity(nil, testCluster)
		m.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{
			RunAsUser: ptr.To(DefaultID), RunAsGroup: ptr.To(DefaultID), FSGroup: ptr.To(DefaultID),
			FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch), SupplementalGroups: []int64{},
		}
		m.Spec.Storage = storageSpec("1024Mi", "")
	})
	if a, b := TemplateHash(&implicit.Spec, hashImages, CADigests{}), TemplateHash(&explicit.Spec, hashImages, CADigests{}); a != b {
		t.Errorf("implicit defaults hash %s, explicit defaults hash %s", a, b)
	}

	// Growing a PVC whose default quota is already capped at 2 GiB changes nothing in the Pod.
	big := newMember(func(m *etcdv1alpha2.EtcdMember) { m.Spec.Storage = storageSpec("10Gi", "") })
	before := TemplateHash(&big.Spec, hashImages, CADigests{})
	setSize(&big.Spec.Storage, "20Gi")
	if after := TemplateHash(&big.Spec, hashImages, CADigests{}); after != before {
		t.Error("growing a PVC past 4Gi changed the hash although the quota stays at 2GiB")
	}
}

// TestTemplateHashStable: the hash must survive anything that does not change meaning: map
// insertion order, an API round trip, non-canonical quantities, and repeated calls.
func TestTemplateHashStable(t *testing.T) {
	t.Parallel()
	m := hashMember()
	want := TemplateHash(&m.Spec, hashImages, hashCAs)

	for range 20 {
		if got := TemplateHash(&m.Spec, hashImages, hashCAs); got != want {
			t.Fatalf("hash not deterministic: %s then %s", want, got)
		}
	}

	// Maps built in the opposite insertion order.
	reordered := hashMember()
	reordered.Spec.NodeSelector = map[string]string{}
	reordered.Spec.NodeSelector["disk"] = "ssd"
	reordered.Spec.NodeSelector["pool"] = "etcd"
	reordered.Spec.Resources.Requests = corev1.ResourceList{}
	reordered.Spec.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("256Mi")
	reordered.Spec.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	if got := TemplateHash(&reordered.Spec, hashImages, hashCAs); got != want {
		t.Errorf("map insertion order changed the hash: %s vs %s", got, want)
	}

	// A JSON round trip, as through the API server.
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back etcdv1alpha2.EtcdMember
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if got := TemplateHash(&back.Spec, hashImages, hashCAs); got != want {
		t.Errorf("JSON round trip changed the hash: %s vs %s", got, want)
	}

	// The same spec as a user would type it, with fields in another order and quantities in
	// other spellings.
	typed := `{
	  "metadata": {"name": "main-x7k2p", "namespace": "prod"},
	  "spec": {
	    "tls": {"peerSecretRef": {"name": "main-peer-tls"}, "clientServerSecretRef": {"name": "main-server-tls"}},
	    "podSecurityContext": {"supplementalGroups": [4000]},
	    "priorityClassName": "high",
	    "tolerations": [{"value": "etcd", "operator": "Equal", "key": "dedicated"}],
	    "nodeSelector": {"pool": "etcd", "disk": "ssd"},
	    "topologySpreadConstraints": [{"whenUnsatisfiable": "ScheduleAnyway", "topologyKey": "topology.kubernetes.io/zone", "maxSkew": 1}],
	    "options": {"snapshotCount": 10000, "autoCompactionRetention": "1h", "autoCompactionMode": "periodic"},
	    "resources": {"limits": {"memory": "1024Mi"}, "requests": {"memory": "262144Ki", "cpu": "0.2"}},
	    "storage": {"size": "1024Mi"},
	    "version": "3.6.5",
	    "clusterName": "main"
	  }
	}`
	var fromYAMLish etcdv1alpha2.EtcdMember
	if err := json.Unmarshal([]byte(typed), &fromYAMLish); err != nil {
		t.Fatal(err)
	}
	if got := TemplateHash(&fromYAMLish.Spec, hashImages, hashCAs); got != want {
		t.Errorf("field order or quantity spelling changed the hash: %s vs %s", got, want)
	}
}

// TestPodCarriesTemplateHash: the Pod's annotation is the hash of the template it was built
// from, so the member controller can compare it with the authorised one.
func TestPodCarriesTemplateHash(t *testing.T) {
	t.Parallel()
	m := hashMember()
	in := Inputs{ImageRepository: "registry.local/etcd", CADigests: hashCAs, State: ClusterStateNew}
	p := Pod(m, in)
	want := TemplateHash(&m.Spec, MemberImages("registry.local/etcd", m.Spec.Version, ""), hashCAs)
	if got := p.Annotations[etcdv1alpha2.AnnotationTemplateHash]; got != want {
		t.Errorf("Pod template-hash = %q, want %q", got, want)
	}
	// The initial cluster state changes as the cluster forms; it must not change the hash.
	in.State = ClusterStateExisting
	if got := Pod(m, in).Annotations[etcdv1alpha2.AnnotationTemplateHash]; got != want {
		t.Errorf("initial cluster state changed the template hash: %s vs %s", got, want)
	}
}
