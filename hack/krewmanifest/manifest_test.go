package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{
		"kubectl-etcd_v0.3.0_windows_amd64.zip",
		"kubectl-etcd_v0.3.0_linux_arm64.tar.gz",
		"kubectl-etcd_v0.3.0_darwin_arm64.tar.gz",
		"kubectl-etcd_v0.3.0_linux_amd64.tar.gz",
	} {
		p := filepath.Join(dir, name)
		// Each archive's content is its name, so each has its own digest.
		if err := os.WriteFile(p, []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	got, err := Generate(Options{Version: "v0.3.0", URIBase: "https://example.test/releases/v0.3.0/"}, paths)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "etcd.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("manifest differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
	// Each platform carries its own archive's digest, next to its URI.
	for _, p := range paths {
		sum := sha256.Sum256([]byte(filepath.Base(p)))
		pair := "sha256: " + hex.EncodeToString(sum[:]) + "\n    uri: https://example.test/releases/v0.3.0/" + filepath.Base(p) + "\n"
		if !strings.Contains(string(got), pair) {
			t.Errorf("the manifest lacks %q", pair)
		}
	}
	if !strings.Contains(string(got), "uri: https://example.test/releases/v0.3.0/kubectl-etcd_v0.3.0_windows_amd64.zip") ||
		!strings.Contains(string(got), "bin: kubectl-etcd.exe") {
		t.Errorf("the windows platform is not the zip with the .exe:\n%s", got)
	}
}

func TestGenerateRefusesAnUnknownArchiveName(t *testing.T) {
	p := filepath.Join(t.TempDir(), "etcd-linux.tar.gz")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(Options{Version: "v1.0.0", URIBase: "https://x"}, []string{p}); err == nil {
		t.Fatal("an archive named without os and arch was accepted")
	}
}

func TestKrewVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v0.3.0":                  "v0.3.0",
		"0.3.0":                   "v0.3.0",
		"v0.3.0-5-gabc1234-dirty": "v0.3.0-5-gabc1234-dirty",
		"v1.2.3-rc.1+build.5":     "v1.2.3-rc.1+build.5",
		"c13a2f6":                 "v0.0.0-dev-c13a2f6",
		"0123456-dirty":           "v0.0.0-dev-0123456-dirty",
		"dev":                     "v0.0.0-dev-dev",
		"v0.3":                    "v0.0.0-dev-v0-3",
	} {
		if got := KrewVersion(in); got != want {
			t.Errorf("KrewVersion(%q) = %q, want %q", in, got, want)
		}
		if got := KrewVersion(in); !semver.MatchString(got) {
			t.Errorf("KrewVersion(%q) = %q is not a semantic version", in, got)
		}
	}
}
