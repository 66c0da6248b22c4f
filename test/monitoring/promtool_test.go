package monitoring

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// promtoolBinDirEnv names the folder that holds promtool, as `go run ./hack/binaries promtool`
// prints it.
const promtoolBinDirEnv = "PROMTOOL_BIN_DIR"

// requirePromtool returns the path of promtool. It skips the test when PROMTOOL_BIN_DIR is unset
// outside CI, and fails it when the variable is set but names no promtool.
func requirePromtool(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv(promtoolBinDirEnv)
	if dir == "" {
		msg := promtoolBinDirEnv + " is not set: run through `make test`, or set it to the folder `go run ./hack/binaries promtool` prints"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	bin := filepath.Join(dir, "promtool")
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		tb.Fatalf("%s=%s holds no executable promtool (%v)", promtoolBinDirEnv, dir, err)
	}
	return bin
}

// promtool runs promtool with args in the repository root and returns its combined output; a
// non-zero exit fails the test with that output.
func promtool(tb testing.TB, bin string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot(tb)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tb.Fatalf("promtool %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// repoRoot is the repository root: this package is two levels below it.
func repoRoot(tb testing.TB) string {
	tb.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		tb.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// TestAlertRules: the rule file is valid, and every unit test of config/prometheus/tests passes.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	bin := requirePromtool(t)
	t.Log(promtool(t, bin, "--version"))
	t.Log(promtool(t, bin, "check", "rules", RulesFile))
	t.Log(promtool(t, bin, "test", "rules", alertTestsFile))
}
