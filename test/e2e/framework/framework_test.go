package framework

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestKubeconfigPath(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	env := map[string]string{"ETCD_OPERATOR_CACHE": cache}
	getenv := func(k string) string { return env[k] }

	if _, err := KubeconfigPath(getenv); !errors.Is(err, ErrNoKubeconfig) {
		t.Errorf("no kubeconfig anywhere: err = %v, want ErrNoKubeconfig", err)
	}
	def := filepath.Join(cache, "localcluster", "kubeconfig")
	if err := os.MkdirAll(filepath.Dir(def), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := KubeconfigPath(getenv); err != nil || got != def {
		t.Errorf("default kubeconfig = %q, %v; want %q", got, err, def)
	}
	env[EnvKubeconfig] = "/explicit/kubeconfig"
	if got, err := KubeconfigPath(getenv); err != nil || got != "/explicit/kubeconfig" {
		t.Errorf("explicit kubeconfig = %q, %v", got, err)
	}
	// Without ETCD_OPERATOR_CACHE the default follows the Makefile: $XDG_CACHE_HOME, else ~/.cache.
	paths := DefaultKubeconfigPaths(func(k string) string { return map[string]string{"HOME": "/h"}[k] })
	if len(paths) != 1 || paths[0] != "/h/.cache/etcd-operator/localcluster/kubeconfig" {
		t.Errorf("DefaultKubeconfigPaths = %q", paths)
	}
}

func TestArtifactsDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "test", "e2e")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	none := func(string) string { return "" }
	if got := ArtifactsDir(none, deep); got != filepath.Join(root, "artifacts") {
		t.Errorf("ArtifactsDir = %q, want the repository root's artifacts/", got)
	}
	set := func(k string) string {
		if k == EnvArtifacts {
			return "/x"
		}
		return ""
	}
	if got := ArtifactsDir(set, deep); got != "/x" {
		t.Errorf("ArtifactsDir with %s = %q", EnvArtifacts, got)
	}
}

func TestSetupDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"12345": 12345 * time.Millisecond, "0": 0} {
		got, ok := SetupDuration(func(string) string { return in })
		if !ok || got != want {
			t.Errorf("SetupDuration(%q) = %s, %t; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "1.5", "-3", "soon"} {
		if _, ok := SetupDuration(func(string) string { return in }); ok {
			t.Errorf("SetupDuration(%q) accepted a bad value", in)
		}
	}
}

func TestLabelFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		filter string
		labels []Label
		want   bool
	}{
		{"", nil, true},
		{"", []Label{Disruptive}, true},
		{"smoke", []Label{Smoke, Disruptive}, true},
		{"smoke", []Label{Disruptive}, false},
		{"smoke", nil, false},
		{" backup , upgrade ,", []Label{Upgrade}, true},
	}
	for _, tc := range tests {
		if got := ParseLabelFilter(tc.filter).Match(tc.labels); got != tc.want {
			t.Errorf("filter %q on %v = %t, want %t", tc.filter, tc.labels, got, tc.want)
		}
	}
}

func TestNamespaceName(t *testing.T) {
	t.Parallel()
	dns1123 := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for _, name := range []string{
		"TestBootstrap",
		"TestScale/3_to_5_under_load",
		strings.Repeat("TestVeryLongName", 10),
		"Test--/--",
		"///",
	} {
		got := NamespaceName(name)
		if len(got) > 63 || !dns1123.MatchString(got) || !strings.HasPrefix(got, "e2e-") {
			t.Errorf("NamespaceName(%q) = %q, not a valid e2e namespace name", name, got)
		}
	}
	if a, b := NamespaceName("TestX"), NamespaceName("TestX"); a == b {
		t.Errorf("two namespaces for one test collide: %q", a)
	}
}

func TestArtifactName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"TestScale/3_to_5":   "TestScale/3_to_5",
		"TestA/with space":   "TestA/with_space",
		"TestA/../etc":       "TestA/_/etc",
		"TestA/x:y*z":        "TestA/x_y_z",
		"TestLeader/kill#01": "TestLeader/kill_01",
	} {
		if got := ArtifactName(in); got != want {
			t.Errorf("ArtifactName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestArtifactLabel(t *testing.T) {
	t.Parallel()
	label := regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	for _, name := range []string{"TestA", "TestA/sub test", strings.Repeat("TestLong/", 20), "Test_/"} {
		got := ArtifactLabel(name)
		if len(got) > 63 || !label.MatchString(got) {
			t.Errorf("ArtifactLabel(%q) = %q, not a valid label value", name, got)
		}
	}
}

func TestPoll(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	var calls atomic.Int32
	err := Poll(ctx, "third call", time.Second, time.Millisecond, func(context.Context) (bool, string, error) {
		return calls.Add(1) == 3, "", nil
	})
	if err != nil || calls.Load() != 3 {
		t.Errorf("Poll = %v after %d calls, want success after 3", err, calls.Load())
	}

	err = Poll(ctx, "never", 50*time.Millisecond, 5*time.Millisecond, func(context.Context) (bool, string, error) {
		return false, "2/3 Pods Ready", nil
	})
	if !errors.Is(err, ErrWaitTimeout) || !strings.Contains(err.Error(), "2/3 Pods Ready") {
		t.Errorf("Poll timeout = %v, want ErrWaitTimeout naming the last state", err)
	}

	errBoom := errors.New("boom")
	if err := Poll(ctx, "abort", time.Second, time.Millisecond, func(context.Context) (bool, string, error) {
		return false, "", errBoom
	}); !errors.Is(err, errBoom) {
		t.Errorf("Poll with a failing condition = %v, want errBoom", err)
	}

	if err := Poll(ctx, "no timeout", 0, 0, func(context.Context) (bool, string, error) { return true, "", nil }); err == nil {
		t.Error("Poll without a timeout succeeded; every wait must have one")
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := Poll(cancelled, "cancelled", time.Second, time.Millisecond, func(context.Context) (bool, string, error) {
		return false, "", nil
	}); !errors.Is(err, context.Canceled) || errors.Is(err, ErrWaitTimeout) {
		t.Errorf("Poll on a cancelled context = %v, want context.Canceled", err)
	}
}
