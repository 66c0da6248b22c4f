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
	"syscall"
	"testing"
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
	p := f.NewEtcdMigrate(ctx, f.Kubeconfig, args...)
	p.Start()
	return p.Wait()
}

// MigrateProcess is one etcd-migrate process that a test can kill while it runs.
type MigrateProcess struct {
	t           *testing.T
	cmd         *exec.Cmd
	out, errOut bytes.Buffer
	exited      chan struct{}
	res         PluginResult
}

// NewEtcdMigrate prepares an etcd-migrate run as EtcdMigrate does, against kubeconfig (the
// cluster's own, or one pointing at an APIWriteProxy); Start starts it.
func (f *Test) NewEtcdMigrate(ctx context.Context, kubeconfig string, args ...string) *MigrateProcess {
	f.T.Helper()
	bin, err := migrateBuild()
	if err != nil {
		f.T.Fatalf("preparing etcd-migrate: %v", err)
	}
	p := &MigrateProcess{t: f.T, exited: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, bin, append(append([]string{}, args...), "--kubeconfig", kubeconfig, "-n", f.Namespace)...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errOut
	return p
}

// Start starts the process; a failure to start is its result (exit -1).
func (p *MigrateProcess) Start() {
	start := time.Now()
	if err := p.cmd.Start(); err != nil {
		p.res = PluginResult{Code: -1, Stderr: err.Error()}
		close(p.exited)
		return
	}
	go func() {
		defer close(p.exited)
		err := p.cmd.Wait()
		p.res = PluginResult{Stdout: p.out.String(), Stderr: p.errOut.String(), Took: time.Since(start)}
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			p.res.Code = ee.ExitCode()
		} else if err != nil {
			p.res.Code, p.res.Stderr = -1, p.res.Stderr+err.Error()
		}
	}()
}

// Kill sends SIGKILL, which the process cannot handle, and returns once it has exited.
func (p *MigrateProcess) Kill() {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Errorf("killing etcd-migrate: %v", err)
	}
	<-p.exited
}

// Wait returns the result once the process has exited; a killed one has exit code -1.
func (p *MigrateProcess) Wait() PluginResult {
	<-p.exited
	return p.res
}
