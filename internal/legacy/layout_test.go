package legacy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestNames(t *testing.T) {
	t.Parallel()
	plain := &EtcdCluster{}
	plain.Name, plain.Namespace = "etcd", "tenant-a"
	custom := &EtcdCluster{Spec: EtcdClusterSpec{
		ServiceTemplate:         &EmbeddedService{EmbeddedObjectMetadata: EmbeddedObjectMetadata{Name: "etcd-client"}},
		HeadlessServiceTemplate: &EmbeddedMetadataResource{EmbeddedObjectMetadata: EmbeddedObjectMetadata{Name: "etcd-peers"}},
	}}
	custom.Name = "etcd"
	emptyTemplates := &EtcdCluster{Spec: EtcdClusterSpec{
		ServiceTemplate:         &EmbeddedService{},
		HeadlessServiceTemplate: &EmbeddedMetadataResource{},
	}}
	emptyTemplates.Name = "etcd"

	for _, tc := range []struct{ got, want string }{
		{StatefulSetName("etcd"), "etcd"},
		{PodName("etcd", 2), "etcd-2"},
		{PVCName(PodName("etcd", 0)), "data-etcd-0"},
		{HeadlessServiceName(plain), "etcd-headless"},
		{HeadlessServiceName(custom), "etcd-peers"},
		{HeadlessServiceName(emptyTemplates), "etcd-headless"},
		{ClientServiceName(plain), "etcd"},
		{ClientServiceName(custom), "etcd-client"},
		{ClientServiceName(emptyTemplates), "etcd"},
		{StateConfigMapName("etcd"), "etcd-cluster-state"},
		{PDBName("etcd"), "etcd"},
		{ClusterToken("etcd", "tenant-a"), "etcd-tenant-a"},
		{DataDir, "/var/run/etcd/default.etcd"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	want := map[string]string{"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "etcd", "app.kubernetes.io/managed-by": "etcd-operator"}
	if diff := cmp.Diff(want, Selector("etcd")); diff != "" {
		t.Errorf("Selector (-want +got):\n%s", diff)
	}
	if (&EtcdCluster{}).Replicas() != 3 {
		t.Error("replicas default is not 3")
	}
}

func TestDefaultQuotaBackendBytesIs95PercentRoundedDown(t *testing.T) {
	t.Parallel()
	for size, want := range map[string]int64{
		"4Gi":  4080218931, // 4294967296 × 0.95 = 4080218931.2
		"1Gi":  1020054732, // 1073741824 × 0.95 = 1020054732.8
		"10Gi": 10200547328,
		"100":  95,
		"99":   94, // 94.05
		"1":    0,
		"0":    0,
	} {
		if got := DefaultQuotaBackendBytes(resource.MustParse(size)); got != want {
			t.Errorf("DefaultQuotaBackendBytes(%s) = %d, want %d", size, got, want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args []string
		want map[string]string
	}{
		"values and booleans": {
			args: []string{"--name=$(POD_NAME)", "--peer-auto-tls", "--client-cert-auth", "--data-dir=/var/run/etcd/default.etcd"},
			want: map[string]string{"name": "$(POD_NAME)", "peer-auto-tls": "true", "client-cert-auth": "true", "data-dir": "/var/run/etcd/default.etcd"},
		},
		"last value wins, as in etcd": {
			args: []string{"--auto-compaction-retention=5m", "--snapshot-count=10000", "--auto-compaction-retention=1h"},
			want: map[string]string{"auto-compaction-retention": "1h", "snapshot-count": "10000"},
		},
		"value with equals signs": {
			args: []string{"--initial-cluster=a=https://a:2380,b=https://b:2380"},
			want: map[string]string{"initial-cluster": "a=https://a:2380,b=https://b:2380"},
		},
		"single dash and non-flags": {
			args: []string{"etcd", "-debug", "--", "stray", "--empty="},
			want: map[string]string{"debug": "true", "empty": ""},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, ParseFlags(tc.args)); diff != "" {
				t.Errorf("ParseFlags (-want +got):\n%s", diff)
			}
		})
	}
}
