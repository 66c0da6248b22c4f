package desired

import (
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// commonFlags are the flags of newMember, before options, corruption checks and TLS.
var commonFlags = []string{
	"--name=main-x7k2p",
	"--data-dir=/var/lib/etcd",
	"--listen-peer-urls=http://0.0.0.0:2380",
	"--listen-client-urls=http://0.0.0.0:2379",
	"--advertise-client-urls=http://main-x7k2p.main.prod.svc:2379",
	"--initial-advertise-peer-urls=http://main-x7k2p.main.prod.svc:2380",
	"--listen-metrics-urls=http://0.0.0.0:2381",
	"--initial-cluster=main-x7k2p=http://main-x7k2p.main.prod.svc:2380",
	"--initial-cluster-token=prod-main-0b5e6c1f",
	"--initial-cluster-state=new",
	"--quota-backend-bytes=536870912",
}

// TestEtcdFlagsPerMinor pins the whole command line for each supported minor. The corruption
// check spellings were checked against etcd's sources (docs/design/pod-template.md).
func TestEtcdFlagsPerMinor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version    string
		corruption []string
	}{
		{"3.5.0", []string{"--experimental-initial-corrupt-check=true"}},
		{"3.5.4", []string{"--experimental-initial-corrupt-check=true"}},
		{"3.5.5", []string{"--experimental-initial-corrupt-check=true", "--experimental-compact-hash-check-enabled=true"}},
		{"3.5.21", []string{"--experimental-initial-corrupt-check=true", "--experimental-compact-hash-check-enabled=true"}},
		{"3.6.0", []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"}},
		{"3.6.16", []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"}},
		{"3.7.0", []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"}},
		{"3.7.3", []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"}},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			m := newMember(func(m *etcdv1alpha2.EtcdMember) { m.Spec.Version = tc.version })
			got := EtcdFlags(MemberFlagInputs(m, ClusterStateNew))
			want := append(append([]string(nil), commonFlags...), tc.corruption...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("EtcdFlags(%s) mismatch (-want +got):\n%s", tc.version, diff)
			}
		})
	}
}

// flagMap indexes rendered flags by name, failing on duplicates.
func flagMap(t *testing.T, flags []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range flags {
		name, value, ok := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if !ok || !strings.HasPrefix(f, "--") {
			t.Fatalf("flag %q is not of the form --name=value", f)
		}
		if _, dup := out[name]; dup {
			t.Fatalf("flag %q rendered twice in %q", name, flags)
		}
		out[name] = value
	}
	return out
}

// TestEtcdFlagsOptions covers each typed option and the default quota on its own. A nil value
// in want means the flag must be absent.
func TestEtcdFlagsOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts *etcdv1alpha2.EtcdOptions
		size string
		want map[string]*string
	}{
		{"no options, 1Gi: quota is half the disk", nil, "1Gi",
			map[string]*string{"quota-backend-bytes": ptr.To("536870912"), "auto-compaction-mode": nil, "auto-compaction-retention": nil, "snapshot-count": nil}},
		{"no options, 4Gi: quota capped at 2GiB", nil, "4Gi",
			map[string]*string{"quota-backend-bytes": ptr.To("2147483648")}},
		{"no options, 100Gi: quota capped at 2GiB", nil, "100Gi",
			map[string]*string{"quota-backend-bytes": ptr.To("2147483648")}},
		{"no options, 3Gi: half", nil, "3Gi",
			map[string]*string{"quota-backend-bytes": ptr.To("1610612736")}},
		{"no options, decimal size", nil, "500M",
			map[string]*string{"quota-backend-bytes": ptr.To("250000000")}},
		{"no options, zero size: etcd default", nil, "0",
			map[string]*string{"quota-backend-bytes": nil}},
		{"options without quota still default it", &etcdv1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](5000)}, "1Gi",
			map[string]*string{"quota-backend-bytes": ptr.To("536870912"), "snapshot-count": ptr.To("5000")}},
		{"explicit quota wins over the default", &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](8 << 30)}, "1Gi",
			map[string]*string{"quota-backend-bytes": ptr.To("8589934592")}},
		{"explicit zero quota means etcd's default", &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](0)}, "1Gi",
			map[string]*string{"quota-backend-bytes": nil}},
		{"periodic compaction", &etcdv1alpha2.EtcdOptions{AutoCompactionMode: etcdv1alpha2.AutoCompactionPeriodic, AutoCompactionRetention: "1h30m"}, "1Gi",
			map[string]*string{"auto-compaction-mode": ptr.To("periodic"), "auto-compaction-retention": ptr.To("1h30m")}},
		{"revision compaction", &etcdv1alpha2.EtcdOptions{AutoCompactionMode: etcdv1alpha2.AutoCompactionRevision, AutoCompactionRetention: "1000"}, "1Gi",
			map[string]*string{"auto-compaction-mode": ptr.To("revision"), "auto-compaction-retention": ptr.To("1000")}},
		{"retention alone uses etcd's default mode", &etcdv1alpha2.EtcdOptions{AutoCompactionRetention: "5m"}, "1Gi",
			map[string]*string{"auto-compaction-mode": nil, "auto-compaction-retention": ptr.To("5m")}},
		{"snapshot count", &etcdv1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](10000)}, "1Gi",
			map[string]*string{"snapshot-count": ptr.To("10000")}},
		{"non-positive snapshot count is left out", &etcdv1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](0)}, "1Gi",
			map[string]*string{"snapshot-count": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMember(func(m *etcdv1alpha2.EtcdMember) {
				m.Spec.Options = tc.opts
				setSize(&m.Spec.Storage, tc.size)
			})
			got := flagMap(t, EtcdFlags(MemberFlagInputs(m, ClusterStateExisting)))
			for name, want := range tc.want {
				v, ok := got[name]
				switch {
				case want == nil && ok:
					t.Errorf("--%s=%s rendered, want it absent", name, v)
				case want != nil && !ok:
					t.Errorf("--%s absent, want %q", name, *want)
				case want != nil && v != *want:
					t.Errorf("--%s=%s, want %q", name, v, *want)
				}
			}
		})
	}
}

func TestEtcdFlagsOptionsOrder(t *testing.T) {
	t.Parallel()
	m := newMember(func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.Version = "3.5.21"
		m.Spec.Options = &etcdv1alpha2.EtcdOptions{
			QuotaBackendBytes:       ptr.To[int64](1 << 30),
			AutoCompactionMode:      etcdv1alpha2.AutoCompactionPeriodic,
			AutoCompactionRetention: "5m",
			SnapshotCount:           ptr.To[int64](20000),
		}
	})
	got := EtcdFlags(MemberFlagInputs(m, ClusterStateExisting))
	want := []string{
		"--quota-backend-bytes=1073741824",
		"--auto-compaction-mode=periodic",
		"--auto-compaction-retention=5m",
		"--snapshot-count=20000",
		"--experimental-initial-corrupt-check=true",
		"--experimental-compact-hash-check-enabled=true",
	}
	if diff := cmp.Diff(want, got[len(commonFlags)-1:]); diff != "" {
		t.Errorf("options tail mismatch (-want +got):\n%s", diff)
	}
}

func TestEtcdFlagsTLS(t *testing.T) {
	t.Parallel()
	const (
		clientFiles = "--cert-file=/etc/etcd/tls/client/tls.crt --key-file=/etc/etcd/tls/client/tls.key"
		clientMTLS  = "--client-cert-auth=true --trusted-ca-file=/etc/etcd/tls/client/ca.crt"
		peerMTLS    = "--peer-cert-file=/etc/etcd/tls/peer/tls.crt --peer-key-file=/etc/etcd/tls/peer/tls.key " +
			"--peer-trusted-ca-file=/etc/etcd/tls/peer/ca.crt --peer-client-cert-auth=true --peer-cert-allowed-hostname=peer.main.prod.svc"
	)
	tests := []struct {
		name                     string
		tls                      *etcdv1alpha2.EtcdMemberTLS
		clientScheme, peerScheme string
		tail                     string
	}{
		{"plaintext", nil, "http", "http", ""},
		{"empty TLS block", &etcdv1alpha2.EtcdMemberTLS{}, "http", "http", ""},
		{"client server TLS", &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("main-server-tls")}, "https", "http", clientFiles},
		{"client mTLS", &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("s"), ClientMTLS: true}, "https", "http", clientFiles + " " + clientMTLS},
		{"mTLS without a server certificate is ignored", &etcdv1alpha2.EtcdMemberTLS{ClientMTLS: true}, "http", "http", ""},
		{"peer TLS is always mutual", &etcdv1alpha2.EtcdMemberTLS{PeerSecretRef: ref("main-peer-tls")}, "http", "https", peerMTLS},
		{"peer auto TLS", &etcdv1alpha2.EtcdMemberTLS{PeerAutoTLS: true}, "http", "https", "--peer-auto-tls=true"},
		{"peer Secret wins over auto TLS", &etcdv1alpha2.EtcdMemberTLS{PeerSecretRef: ref("p"), PeerAutoTLS: true}, "http", "https", peerMTLS},
		{"everything", &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("s"), ClientMTLS: true, PeerSecretRef: ref("p")}, "https", "https",
			clientFiles + " " + clientMTLS + " " + peerMTLS},
		{"adopted member: any certificate of the peer CA", &etcdv1alpha2.EtcdMemberTLS{PeerSecretRef: ref("p")}, "http", "https",
			strings.TrimSuffix(peerMTLS, " --peer-cert-allowed-hostname=peer.main.prod.svc")},
		{"client TLS with legacy peer auto TLS", &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("s"), PeerAutoTLS: true}, "https", "https",
			clientFiles + " --peer-auto-tls=true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMember(func(m *etcdv1alpha2.EtcdMember) {
				m.Spec.TLS = tc.tls
				if strings.HasPrefix(tc.name, "adopted") {
					m.Annotations = map[string]string{etcdv1alpha2.AnnotationHeadlessServiceName: "main"}
				}
			})
			got := EtcdFlags(MemberFlagInputs(m, ClusterStateExisting))
			fm := flagMap(t, got)
			host := "main-x7k2p.main.prod.svc"
			wantURLs := map[string]string{
				"listen-client-urls":          tc.clientScheme + "://0.0.0.0:2379",
				"advertise-client-urls":       tc.clientScheme + "://" + host + ":2379",
				"listen-peer-urls":            tc.peerScheme + "://0.0.0.0:2380",
				"initial-advertise-peer-urls": tc.peerScheme + "://" + host + ":2380",
				"listen-metrics-urls":         "http://0.0.0.0:2381",
			}
			for name, want := range wantURLs {
				if fm[name] != want {
					t.Errorf("--%s=%s, want %s", name, fm[name], want)
				}
			}
			// TLS flags come last, after the corruption check.
			var tail []string
			for i, f := range got {
				if strings.HasPrefix(f, "--feature-gates=") {
					tail = got[i+1:]
				}
			}
			if diff := cmp.Diff(strings.Fields(tc.tail), tail, cmp.Comparer(func(a, b []string) bool {
				return strings.Join(a, " ") == strings.Join(b, " ")
			})); diff != "" {
				t.Errorf("TLS flags mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDataDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		subPath, want string
	}{
		{"", "/var/lib/etcd"},
		{"default.etcd", "/var/lib/etcd/default.etcd"},
		{"data", "/var/lib/etcd/data"},
		{"a_b-c.1", "/var/lib/etcd/a_b-c.1"},
		{"9", "/var/lib/etcd/9"},
		{"..", "/var/lib/etcd"},
		{".", "/var/lib/etcd"},
		{".hidden", "/var/lib/etcd"},
		{"-flag", "/var/lib/etcd"},
		{"_x", "/var/lib/etcd"},
		{"a/b", "/var/lib/etcd"},
		{"../etc", "/var/lib/etcd"},
		{"/abs", "/var/lib/etcd"},
		{"a b", "/var/lib/etcd"},
		{"a\nb", "/var/lib/etcd"},
		{"ä", "/var/lib/etcd"},
		{"a=b", "/var/lib/etcd"},
		{strings.Repeat("a", 255), "/var/lib/etcd/" + strings.Repeat("a", 255)},
		{strings.Repeat("a", 256), "/var/lib/etcd"},
	}
	for _, tc := range tests {
		t.Run(tc.subPath, func(t *testing.T) {
			t.Parallel()
			if got := DataDir(tc.subPath); got != tc.want {
				t.Errorf("DataDir(%q) = %q, want %q", tc.subPath, got, tc.want)
			}
			m := newMember(func(m *etcdv1alpha2.EtcdMember) {
				m.Annotations = map[string]string{etcdv1alpha2.AnnotationDataDirSubPath: tc.subPath}
			})
			if got := flagMap(t, EtcdFlags(MemberFlagInputs(m, ClusterStateExisting)))["data-dir"]; got != tc.want {
				t.Errorf("--data-dir=%s, want %s", got, tc.want)
			}
		})
	}
}

func TestEtcdFlagsHeadlessServiceAnnotation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		annotation, wantHost string
	}{
		{"", "main-x7k2p.main.prod.svc"},
		{"legacy-headless", "main-x7k2p.legacy-headless.prod.svc"},
		{"Not_A_Service", "main-x7k2p.main.prod.svc"},
		{"a.b", "main-x7k2p.main.prod.svc"},
	}
	for _, tc := range tests {
		t.Run(tc.annotation, func(t *testing.T) {
			t.Parallel()
			m := newMember(func(m *etcdv1alpha2.EtcdMember) {
				if tc.annotation != "" {
					m.Annotations = map[string]string{etcdv1alpha2.AnnotationHeadlessServiceName: tc.annotation}
				}
			})
			fm := flagMap(t, EtcdFlags(MemberFlagInputs(m, ClusterStateExisting)))
			if want := "http://" + tc.wantHost + ":2379"; fm["advertise-client-urls"] != want {
				t.Errorf("--advertise-client-urls=%s, want %s", fm["advertise-client-urls"], want)
			}
			if want := "http://" + tc.wantHost + ":2380"; fm["initial-advertise-peer-urls"] != want {
				t.Errorf("--initial-advertise-peer-urls=%s, want %s", fm["initial-advertise-peer-urls"], want)
			}
		})
	}
}

func TestEtcdFlagsInitialClusterState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state ClusterState
		want  string
	}{
		{ClusterStateNew, "new"},
		{ClusterStateExisting, "existing"},
		{"", "existing"},
		{"NEW", "existing"},
	}
	for _, tc := range tests {
		t.Run(string(tc.state), func(t *testing.T) {
			t.Parallel()
			fm := flagMap(t, EtcdFlags(MemberFlagInputs(newMember(), tc.state)))
			if got := fm["initial-cluster-state"]; got != tc.want {
				t.Errorf("--initial-cluster-state=%s, want %s", got, tc.want)
			}
		})
	}
}

func TestEtcdFlagsLeavesEmptyValuesOut(t *testing.T) {
	t.Parallel()
	m := newMember(func(m *etcdv1alpha2.EtcdMember) {
		m.Spec.InitialCluster = ""
		m.Spec.ClusterToken = ""
	})
	fm := flagMap(t, EtcdFlags(MemberFlagInputs(m, ClusterStateExisting)))
	for _, name := range []string{"initial-cluster", "initial-cluster-token"} {
		if v, ok := fm[name]; ok {
			t.Errorf("--%s=%q rendered for an empty value", name, v)
		}
	}
}

func TestEtcdFlagsUnparseableVersionRendersNewest(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "latest", "3.6", "3.6.x", "v3.6.1-rc.0", "3.-1.0"} {
		m := newMember(func(m *etcdv1alpha2.EtcdMember) { m.Spec.Version = v })
		fm := flagMap(t, EtcdFlags(MemberFlagInputs(m, ClusterStateExisting)))
		if _, ok := fm["feature-gates"]; !ok {
			t.Errorf("version %q: want the newest (--feature-gates) spelling, got %v", v, fm)
		}
	}
}

// checkFlags asserts the invariants every rendering must hold, whatever the input.
func checkFlags(t *testing.T, flags []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range flags {
		if !strings.HasPrefix(f, "--") {
			t.Fatalf("flag %q does not start with --", f)
		}
		name, value, ok := strings.Cut(f[2:], "=")
		if !ok || name == "" || value == "" {
			t.Fatalf("flag %q has an empty name or value", f)
		}
		if seen[name] {
			t.Fatalf("flag --%s rendered twice in %q", name, flags)
		}
		seen[name] = true
	}
	for _, required := range []string{"data-dir", "listen-peer-urls", "listen-client-urls", "listen-metrics-urls", "initial-cluster-state"} {
		if !seen[required] {
			t.Fatalf("required flag --%s missing from %q", required, flags)
		}
	}
	if !seen["feature-gates"] && !seen[flagInitialCorruptCheck35] {
		t.Fatalf("no initial corruption check in %q", flags)
	}
	for _, f := range flags {
		if dir, ok := strings.CutPrefix(f, "--data-dir="); ok {
			if clean := path.Clean(dir); clean != dir || (clean != DataMountPath && path.Dir(clean) != DataMountPath) {
				t.Fatalf("--data-dir=%q is not the data volume or one directory below it", dir)
			}
		}
	}
}

// FuzzEtcdFlags renders arbitrary inputs: the renderer must never panic, never emit an empty or
// duplicated flag, always keep the data directory inside the data volume, and always turn the
// initial corruption check on.
func FuzzEtcdFlags(f *testing.F) {
	f.Add("main-x7k2p", "prod", "main", "", "3.6.5", testInitial, testToken, true,
		int64(1<<30), int64(0), false, "", "", int64(0), false, false, false, false)
	f.Add("m", "ns", "legacy", "default.etcd", "3.5.21", "m=https://m.legacy.ns.svc:2380", "t", false,
		int64(10<<30), int64(4<<30), true, "periodic", "1h", int64(10000), true, true, true, false)
	f.Add("m", "ns", "", "../x", "3.5.4", "", "", false,
		int64(-1), int64(-5), true, "revision", "", int64(-1), false, true, false, true)
	f.Add("", "", "", "", "", "", "", true, int64(0), int64(0), false, "", "", int64(0), false, false, false, false)
	f.Fuzz(func(t *testing.T, name, namespace, service, subPath, version, initialCluster, token string, stateNew bool,
		sizeBytes, quota int64, quotaSet bool, mode, retention string, snapshotCount int64,
		clientTLS, clientMTLS, peerTLS, peerAutoTLS bool,
	) {
		in := FlagInputs{
			Name: name, Namespace: namespace, Service: service, DataDirSubPath: subPath, Version: version,
			InitialCluster: initialCluster, ClusterToken: token, State: ClusterStateExisting,
			StorageSize: *resource.NewQuantity(sizeBytes, resource.BinarySI),
			Options: &etcdv1alpha2.EtcdOptions{
				AutoCompactionMode:      etcdv1alpha2.AutoCompactionMode(mode),
				AutoCompactionRetention: retention,
				SnapshotCount:           &snapshotCount,
			},
			TLS: &etcdv1alpha2.EtcdMemberTLS{ClientMTLS: clientMTLS, PeerAutoTLS: peerAutoTLS},
		}
		if stateNew {
			in.State = ClusterStateNew
		}
		if quotaSet {
			in.Options.QuotaBackendBytes = &quota
		}
		if clientTLS {
			in.TLS.ClientServerSecretRef = ref("client")
		}
		if peerTLS {
			in.TLS.PeerSecretRef = ref("peer")
		}
		flags := EtcdFlags(in)
		checkFlags(t, flags)
		// The same inputs always render the same command line.
		if diff := cmp.Diff(flags, EtcdFlags(in)); diff != "" {
			t.Fatalf("EtcdFlags is not deterministic:\n%s", diff)
		}
	})
}

// TestAdvertisedURLsMatchFlags: PeerURL and ClientURL, which the cluster controller registers
// with etcd, are exactly what the member advertises.
func TestAdvertisedURLsMatchFlags(t *testing.T) {
	t.Parallel()
	tlsModes := []*etcdv1alpha2.EtcdMemberTLS{
		nil,
		{ClientServerSecretRef: ref("s"), ClientMTLS: true},
		{PeerSecretRef: ref("p")},
		{PeerAutoTLS: true},
		{ClientServerSecretRef: ref("s"), PeerSecretRef: ref("p"), PeerAutoTLS: true},
	}
	for _, tls := range tlsModes {
		for _, annotations := range []map[string]string{nil, {etcdv1alpha2.AnnotationHeadlessServiceName: "legacy"}} {
			m := newMember(func(m *etcdv1alpha2.EtcdMember) {
				m.Spec.TLS = tls
				m.Annotations = annotations
			})
			fm := flagMap(t, EtcdFlags(MemberFlagInputs(m, ClusterStateExisting)))
			if got, want := PeerURL(m), fm["initial-advertise-peer-urls"]; got != want {
				t.Errorf("tls=%+v annotations=%v: PeerURL = %s, flag = %s", tls, annotations, got, want)
			}
			if got, want := ClientURL(m), fm["advertise-client-urls"]; got != want {
				t.Errorf("tls=%+v annotations=%v: ClientURL = %s, flag = %s", tls, annotations, got, want)
			}
		}
	}
	if got, want := PeerURL(newMember()), "http://main-x7k2p.main.prod.svc:2380"; got != want {
		t.Errorf("PeerURL = %s, want %s", got, want)
	}
}

// TestQuotaBackendBytes: the quota members run with, etcd's default included, which the
// per-member quota usage metric divides by (docs/monitoring.md, "Metrics").
func TestQuotaBackendBytes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		opts *etcdv1alpha2.EtcdOptions
		size string
		want int64
	}{
		{"default: half the disk", nil, "1Gi", 512 << 20},
		{"default: capped at 2 GiB", nil, "10Gi", 2 << 30},
		{"explicit", &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](300 << 20)}, "1Gi", 300 << 20},
		{"explicit 0: etcd's own default", &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](0)}, "8Gi", 2 << 30},
	} {
		if got := QuotaBackendBytes(tt.opts, resource.MustParse(tt.size)); got != tt.want {
			t.Errorf("%s: QuotaBackendBytes = %d, want %d", tt.name, got, tt.want)
		}
	}
}
