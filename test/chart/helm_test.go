package chart

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const (
	repoRoot = "../.."
	// release and namespace give the chart the names config/ hard-codes.
	release   = "etcd-operator"
	namespace = "etcd-operator-system"
)

var chartDir = filepath.Join(repoRoot, "charts", "etcd-operator")

// requireHelm returns the pinned helm binary, or skips the test when HELM_BIN_DIR is unset,
// which happens only outside `make test`; in CI (CI=true) that is a failure, so a green CI run
// never means the chart went unchecked.
func requireHelm(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("HELM_BIN_DIR")
	if dir == "" {
		msg := "HELM_BIN_DIR is unset: run `make test`, or HELM_BIN_DIR=$(go run ./hack/binaries helm) go test ./test/chart/"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip("skipping the chart tests, which need the pinned helm CLI: " + msg)
	}
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("HELM_BIN_DIR=%s has no helm: %v", dir, err)
	}
	return bin
}

// helmTemplate renders the chart as release in namespace with the given flags (such as --set
// a=b) and returns the objects, or the error with helm's stderr.
func helmTemplate(tb testing.TB, flags ...string) ([]*unstructured.Unstructured, error) {
	tb.Helper()
	args := append([]string{"template", release, chartDir, "--namespace", namespace}, flags...)
	cmd := exec.CommandContext(tb.Context(), requireHelm(tb), args...)
	// No repositories, plugins or caches of the user's: the chart has no dependencies.
	home := tb.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.New(strings.TrimSpace(stderr.String()) + ": " + err.Error())
	}
	return decodeAll(tb, stdout.Bytes()), nil
}

// mustTemplate is helmTemplate with each of set given as --set; it fails the test on an error.
func mustTemplate(tb testing.TB, set ...string) []*unstructured.Unstructured {
	tb.Helper()
	objs, err := helmTemplate(tb, setFlags(set...)...)
	if err != nil {
		tb.Fatalf("helm template %v: %v", set, err)
	}
	return objs
}

func setFlags(set ...string) []string {
	var flags []string
	for _, s := range set {
		flags = append(flags, "--set", s)
	}
	return flags
}

// kustomizeBuild builds a folder of config/ in process, as `kubectl apply -k` would.
func kustomizeBuild(tb testing.TB, dir string) []*unstructured.Unstructured {
	tb.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, dir))
	if err != nil {
		tb.Fatalf("kustomize build %s: %v", dir, err)
	}
	y, err := m.AsYaml()
	if err != nil {
		tb.Fatalf("kustomize build %s: %v", dir, err)
	}
	return decodeAll(tb, y)
}

// decodeAll decodes a multi-document YAML stream, skipping empty documents.
func decodeAll(tb testing.TB, data []byte) []*unstructured.Unstructured {
	tb.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			tb.Fatalf("decoding rendered YAML: %v", err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}
