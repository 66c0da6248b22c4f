//go:build e2e

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
)

// Plugin runs `kubectl etcd` the way a user does: the pinned kubectl finds the kubectl-etcd
// binary built from the work tree on PATH through its plugin lookup
// (docs/kubectl-etcd.md, "Install").
type Plugin struct {
	kubectl    string
	path       string
	kubeconfig string
	namespace  string
}

// PluginResult is one run's outcome.
type PluginResult struct {
	Stdout, Stderr string
	// Code is the exit code.
	Code int
	// Took is how long the process ran: building the binary on first use is not in it.
	Took time.Duration
}

// pluginBuild builds the pinned kubectl (or reuses it) and kubectl-etcd once per test process.
var pluginBuild = sync.OnceValues(func() (dirs [2]string, err error) {
	ctx := context.Background()
	wd, err := os.Getwd()
	if err != nil {
		return dirs, err
	}
	root, err := pinned.FindRepoRoot(wd)
	if err != nil {
		return dirs, err
	}
	cacheDir, err := pinned.DefaultCacheDir()
	if err != nil {
		return dirs, err
	}
	versions, err := pinned.LoadVersions(root)
	if err != nil {
		return dirs, err
	}
	if dirs[0], err = pinned.NewBuilder(cacheDir, versions, io.Discard).Kubernetes(ctx); err != nil {
		return dirs, err
	}
	dirs[1], err = os.MkdirTemp("", "kubectl-etcd-e2e-")
	if err != nil {
		return dirs, err
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dirs[1], "kubectl-etcd"), "./cmd/kubectl-etcd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return dirs, fmt.Errorf("building kubectl-etcd: %w: %s", err, out)
	}
	return dirs, nil
})

// KubectlEtcd returns a runner of `kubectl etcd` in the test's namespace.
func (f *Test) KubectlEtcd() *Plugin {
	f.T.Helper()
	dirs, err := pluginBuild()
	if err != nil {
		f.T.Fatalf("preparing kubectl etcd: %v", err)
	}
	return &Plugin{
		kubectl:    filepath.Join(dirs[0], "kubectl"),
		path:       dirs[1] + string(os.PathListSeparator) + os.Getenv("PATH"),
		kubeconfig: f.Kubeconfig,
		namespace:  f.Namespace,
	}
}

// Run runs `kubectl etcd args... -n <namespace>` with no terminal on stdin, as a script would.
func (p *Plugin) Run(ctx context.Context, args ...string) PluginResult {
	cmd := exec.CommandContext(ctx, p.kubectl, append(append([]string{"etcd"}, args...), "-n", p.namespace)...)
	cmd.Env = append(os.Environ(), "PATH="+p.path, "KUBECONFIG="+p.kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := PluginResult{Stdout: out.String(), Stderr: errOut.String(), Took: time.Since(start)}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		r.Code = ee.ExitCode()
	} else if err != nil {
		r.Code, r.Stderr = -1, r.Stderr+err.Error()
	}
	return r
}

// String shows a run in a failure message.
func (r PluginResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, strings.TrimSpace(r.Stderr))
}
