package desired

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		got, want string
	}{
		{Image("", "3.6.5"), "quay.io/coreos/etcd:v3.6.5"},
		{Image("registry.local/etcd", "3.5.21"), "registry.local/etcd:v3.5.21"},
		{PVCName("main-x7k2p"), "data-main-x7k2p"},
		{HeadlessServiceName("main"), "main"},
		{ClientServiceName("main"), "main-client"},
		{PDBName("main"), "main"},
		{MemberHost("main-x7k2p", "main", "prod"), "main-x7k2p.main.prod.svc"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestMergeMetadata(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		additional, own map[string]string
		want            map[string]string
	}{
		{"both empty", nil, nil, nil},
		{"empty maps are nil", map[string]string{}, map[string]string{}, nil},
		{"user keys kept", map[string]string{"team": "db"}, nil, map[string]string{"team": "db"}},
		{"operator keys win", map[string]string{etcdv1alpha2.LabelInstance: "other", "team": "db"},
			map[string]string{etcdv1alpha2.LabelInstance: "main"},
			map[string]string{etcdv1alpha2.LabelInstance: "main", "team": "db"}},
		{"reserved user keys dropped", map[string]string{etcdv1alpha2.LabelRole: "voter", etcdv1alpha2.ReservedPrefix + "x": "y", "ok": "1"},
			nil, map[string]string{"ok": "1"}},
		{"reserved operator keys kept", nil, map[string]string{etcdv1alpha2.AnnotationTemplateHash: "abc"},
			map[string]string{etcdv1alpha2.AnnotationTemplateHash: "abc"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, mergeMetadata(tc.additional, tc.own)); diff != "" {
				t.Errorf("mergeMetadata mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want etcdVersion
		ok   bool
	}{
		{"3.6.5", etcdVersion{3, 6, 5}, true},
		{"v3.5.21", etcdVersion{3, 5, 21}, true},
		{"3.10.0", etcdVersion{3, 10, 0}, true},
		{"3.6", etcdVersion{}, false},
		{"3.6.5.1", etcdVersion{}, false},
		{"3.6.x", etcdVersion{}, false},
		{"3.6.-1", etcdVersion{}, false},
		{"3.6.+1", etcdVersion{}, false},
		{"3..1", etcdVersion{}, false},
		{"", etcdVersion{}, false},
	}
	for _, tc := range tests {
		got, ok := parseVersion(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseVersion(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if !(etcdVersion{3, 6, 0}).atLeast(v3_5_11) || (etcdVersion{3, 5, 10}).atLeast(v3_5_11) ||
		!(etcdVersion{4, 0, 0}).atLeast(v3_6_0) || (etcdVersion{2, 9, 9}).atLeast(v3_5_5) {
		t.Error("atLeast compares wrongly")
	}
}
