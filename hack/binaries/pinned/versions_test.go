package pinned

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{
			name: "comments and blank lines are skipped",
			in:   "# pinned\n\nKUBERNETES_VERSION=1.35.4\n  # indented comment\nCOREDNS_VERSION=1.14.7\n",
			want: map[string]string{"KUBERNETES_VERSION": "1.35.4", "COREDNS_VERSION": "1.14.7"},
		},
		{name: "empty file", in: "", want: map[string]string{}},
		{name: "missing equals", in: "KUBERNETES_VERSION 1.35.4\n", wantErr: "line 1: want KEY=VALUE"},
		{name: "space before equals", in: "A =1\n", wantErr: "line 1: key"},
		{name: "quoted value", in: "A=\"1\"\n", wantErr: "without quotes"},
		{name: "empty value", in: "\nA=\n", wantErr: "line 2: value of A"},
		{name: "lower case key", in: "a=1\n", wantErr: "upper case"},
		{name: "duplicate key", in: "A=1\nA=2\n", wantErr: "line 2: A is set twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEnv([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseEnv() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEnv() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseEnv() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionsFromEnv(t *testing.T) {
	t.Parallel()
	valid := func() map[string]string {
		return map[string]string{
			"KUBERNETES_VERSION":   "1.35.4",
			"ETCD_VERSION_3_7":     "3.7.3",
			"ETCD_VERSION_3_5":     "3.5.35",
			"ETCD_VERSION_3_6":     "3.6.16",
			"ENVTEST_ETCD_VERSION": "3.6.16",
			"COREDNS_VERSION":      "1.14.7",
			"HELM_VERSION":         "4.3.2",
			"PROMETHEUS_VERSION":   "3.16.0",
			"UNRELATED_KEY":        "kept-for-make",
		}
	}
	with := func(key, value string) map[string]string {
		kv := valid()
		if value == "" {
			delete(kv, key)
		} else {
			kv[key] = value
		}
		return kv
	}
	tests := []struct {
		name    string
		in      map[string]string
		want    Versions
		wantErr string
	}{
		{
			name: "etcd releases sorted by minor",
			in:   valid(),
			want: Versions{
				Kubernetes:  "1.35.4",
				Etcd:        []string{"3.5.35", "3.6.16", "3.7.3"},
				EnvtestEtcd: "3.6.16",
				CoreDNS:     "1.14.7",
				Helm:        "4.3.2",
				Prometheus:  "3.16.0",
			},
		},
		{
			name: "minor 10 sorts after minor 9",
			in:   with("ETCD_VERSION_3_10", "3.10.0"),
			want: Versions{
				Kubernetes:  "1.35.4",
				Etcd:        []string{"3.5.35", "3.6.16", "3.7.3", "3.10.0"},
				EnvtestEtcd: "3.6.16",
				CoreDNS:     "1.14.7",
				Helm:        "4.3.2",
				Prometheus:  "3.16.0",
			},
		},
		{name: "kubernetes missing", in: with("KUBERNETES_VERSION", ""), wantErr: "KUBERNETES_VERSION is not set"},
		{name: "helm missing", in: with("HELM_VERSION", ""), wantErr: "HELM_VERSION is not set"},
		{name: "v prefix refused", in: with("COREDNS_VERSION", "v1.14.7"), wantErr: "without a v prefix"},
		{name: "etcd release of another minor", in: with("ETCD_VERSION_3_6", "3.5.1"), wantErr: "want a 3.6.x release"},
		{name: "malformed etcd key", in: with("ETCD_VERSION_3", "3.6.1"), wantErr: "want ETCD_VERSION_<major>_<minor>"},
		{
			name: "no etcd at all",
			in: map[string]string{
				"KUBERNETES_VERSION": "1.35.4", "ENVTEST_ETCD_VERSION": "3.6.16", "COREDNS_VERSION": "1.14.7",
				"HELM_VERSION":       "4.3.2",
				"PROMETHEUS_VERSION": "3.16.0",
			},
			wantErr: "no ETCD_VERSION_",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := VersionsFromEnv(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("VersionsFromEnv() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("VersionsFromEnv() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("VersionsFromEnv() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadVersionsFromRepository keeps the committed file loadable: every hack/ program and the
// Makefile read it.
func TestLoadVersionsFromRepository(t *testing.T) {
	t.Parallel()
	root, err := FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s has no go.mod: %v", root, err)
	}
	if _, err := LoadVersions(root); err != nil {
		t.Fatal(err)
	}
}
