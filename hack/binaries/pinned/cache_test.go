package pinned

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestIsCachedNeedsBinaryAndMatchingStamp(t *testing.T) {
	t.Parallel()
	const recipe = "package=k8s.io/kubernetes/cmd/kubectl\ngo=go1.26.8\n"
	tests := []struct {
		name   string
		binary bool
		stamp  string // "" means no stamp file
		want   bool
	}{
		{name: "built and stamped", binary: true, stamp: recipe, want: true},
		{name: "interrupted: binary without stamp", binary: true, want: false},
		{name: "new toolchain or flags: stamp of another recipe", binary: true, stamp: "package=x\ngo=go1.25.0\n", want: false},
		{name: "binary deleted after the build", binary: false, stamp: recipe, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tt.binary {
				if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte("bin"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tt.stamp != "" {
				if err := os.WriteFile(stampPath(dir, "kubectl"), []byte(tt.stamp), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := isCached(dir, "kubectl", recipe); got != tt.want {
				t.Errorf("isCached() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLinkAllReplacesStaleLinks(t *testing.T) {
	t.Parallel()
	src, dst := t.TempDir(), t.TempDir()
	etcd := filepath.Join(src, "etcd")
	if err := os.WriteFile(etcd, []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{"etcd": etcd}
	if err := linkAll(dst, sources); err != nil {
		t.Fatal(err)
	}
	// A rebuild renames a new file over the source; the envtest folder must follow it.
	if err := os.WriteFile(etcd+".new", []byte("v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(etcd+".new", etcd); err != nil {
		t.Fatal(err)
	}
	if err := linkAll(dst, sources); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dst, "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "v2" {
		t.Errorf("envtest etcd holds %q, want the rebuilt %q", got, "v2")
	}
}

// TestLockCacheIsPerSet: a held set's lock keeps a second caller of that set waiting, and
// leaves another set free to build.
func TestLockCacheIsPerSet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	unlock, err := lockCache(dir, "helm-v1", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	other, err := lockCache(dir, "etcd-v3", io.Discard)
	if err != nil {
		t.Fatalf("another set's lock while helm-v1 is held: %v", err)
	}
	other()
	got := make(chan struct{})
	go func() {
		second, err := lockCache(dir, "helm-v1", io.Discard)
		if err == nil {
			second()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a second caller took helm-v1's lock while it was held")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second caller did not get helm-v1's lock once it was released")
	}
}
