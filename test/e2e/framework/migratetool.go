//go:build e2e

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
)

// migrateBuild builds etcd-migrate from the work tree once per test process, as pluginBuild
// does for kubectl-etcd.
var migrateBuild = sync.OnceValues(func() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := pinned.FindRepoRoot(wd)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "etcd-migrate-e2e-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "etcd-migrate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/etcd-migrate")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building etcd-migrate: %w: %s", err, out)
	}
	return bin, nil
})

// EtcdMigrate runs the etcd-migrate binary built from the work tree with args, the
// kubeconfig of the cluster under test and `-n <test namespace>`, with no terminal on stdin,
// as a script would (docs/migration.md, "Running it").
func (f *Test) EtcdMigrate(ctx context.Context, args ...string) PluginResult {
	f.T.Helper()
	bin, err := migrateBuild()
	if err != nil {
		f.T.Fatalf("preparing etcd-migrate: %v", err)
	}
	cmd := exec.CommandContext(ctx, bin, append(append([]string{}, args...), "--kubeconfig", f.Kubeconfig, "-n", f.Namespace)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f.Kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	r := PluginResult{Stdout: out.String(), Stderr: errOut.String(), Took: time.Since(start)}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		r.Code = ee.ExitCode()
	} else if err != nil {
		r.Code, r.Stderr = -1, r.Stderr+err.Error()
	}
	return r
}
