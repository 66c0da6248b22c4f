package pinned

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRequiredVersion(t *testing.T) {
	t.Parallel()
	block := "module x\n\ngo 1.26.0\n\nrequire (\n\tgithub.com/cert-manager/cert-manager v1.21.2\n\tk8s.io/klog/v2 v2.140.0\n)\n\nrequire (\n\tgithub.com/cert-manager/cert-manager-extra v0.1.0 // indirect\n)\n"
	single := "module x\n\nrequire github.com/cert-manager/cert-manager v1.20.0 // pinned\n"
	tests := []struct {
		name, goMod, want string
		wantErr           bool
	}{
		{name: "in a require block", goMod: block, want: "v1.21.2"},
		{name: "on a single require line", goMod: single, want: "v1.20.0"},
		{name: "a module with the same prefix does not count", goMod: "module x\nrequire github.com/cert-manager/cert-manager-extra v0.1.0\n", wantErr: true},
		{name: "the module line does not count", goMod: "module github.com/cert-manager/cert-manager\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := RequiredVersion([]byte(tt.goMod), CertManagerModule)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("RequiredVersion = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// The repository's own pin is readable, so hack/binaries and the e2e framework agree on it.
func TestCertManagerVersionOfThisRepository(t *testing.T) {
	t.Parallel()
	root, err := FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	v, err := CertManagerVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	if !releasePattern.MatchString(v) {
		t.Fatalf("CertManagerVersion = %q, want x.y.z", v)
	}
}

// A change to any Go file, go.mod or go.sum changes the digest; other files do not.
func TestSourceDigest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	digest := func() string {
		t.Helper()
		d, err := sourceDigest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	write("go.mod", "module x\n")
	write("main.go", "package main\n")
	first := digest()
	write("README.md", "notes")
	if digest() != first {
		t.Fatal("a README changed the digest")
	}
	for _, name := range []string{"main.go", "go.mod", "go.sum"} {
		before := digest()
		write(name, "changed "+name)
		if digest() == before {
			t.Fatalf("changing %s left the digest unchanged", name)
		}
	}
}
