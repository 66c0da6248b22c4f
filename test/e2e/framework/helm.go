//go:build e2e

package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// EnvHelmBinDir names the folder holding the pinned helm CLI, as `go run ./hack/binaries helm`
// prints it; the e2e make targets set it (building helm on first use), like S3SERVER_BIN_DIR.
const EnvHelmBinDir = "HELM_BIN_DIR"

// Helm runs the pinned helm CLI against the cluster under test, the way a platform team drives a
// release (docs/helm.md). It uses its own empty config, cache and data folders: no repository,
// plugin or registry login of the host's user reaches a test, and the chart has no dependencies.
type Helm struct {
	bin        string
	kubeconfig string
	home       string
}

// RequireHelm returns a helm runner, or skips the test with the reason when HELM_BIN_DIR is
// unset, which happens only outside the e2e make targets; in CI (CI=true) that is a failure, so
// a green CI run never means the chart went untested. A set but wrong HELM_BIN_DIR always is.
func (f *Test) RequireHelm() *Helm {
	f.T.Helper()
	dir := os.Getenv(EnvHelmBinDir)
	if dir == "" {
		msg := EnvHelmBinDir + " is unset: run the e2e make targets, or " + EnvHelmBinDir + "=$(go run ./hack/binaries helm) go test -tags e2e ..."
		if os.Getenv("CI") == "true" {
			f.T.Fatal(msg)
		}
		f.T.Skip("skipping test that needs the pinned helm CLI: " + msg)
	}
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err != nil {
		f.T.Fatalf("%s=%s has no helm: %v", EnvHelmBinDir, dir, err)
	}
	return &Helm{bin: bin, kubeconfig: f.Kubeconfig, home: f.T.TempDir()}
}

// Run runs `helm args...` against the cluster under test and returns its stdout; an error
// carries helm's stderr. ctx bounds it.
func (h *Helm) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+h.home, "HELM_CONFIG_HOME="+h.home, "HELM_DATA_HOME="+h.home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// MustRun is Run bound to the test's context; it fails the test on an error and returns how
// long helm took.
func (h *Helm) MustRun(f *Test, args ...string) time.Duration {
	f.T.Helper()
	start := time.Now()
	if _, err := h.Run(f.Ctx, args...); err != nil {
		f.T.Fatal(err)
	}
	return time.Since(start).Round(time.Millisecond)
}
