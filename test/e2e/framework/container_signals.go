//go:build e2e

package framework

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ContainerSignals sends a container's processes a signal other than KillContainer's SIGKILL.
// Its use is SIGSTOP before damaging a member's files: a running etcd rewrites its bbolt meta
// pages on every commit (every 100 ms under traffic), so bytes overwritten while it runs can be
// repaired by the process before it is killed, and a corruption test would then test nothing.
// A stopped process writes nothing; SIGKILL still ends it.
type ContainerSignals interface {
	// SignalContainer sends signal (a name ctr accepts, e.g. "SIGSTOP") to every process of the
	// Pod's running container.
	SignalContainer(ctx context.Context, namespace, pod, container, signal string) error
}

// SignalContainer implements ContainerSignals through the node's own containerd, as
// KillContainer does.
func (r *runtimeFaults) SignalContainer(ctx context.Context, namespace, pod, container, signal string) error {
	p, err := r.kube.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("sending %s to container %s of %s/%s: %w", signal, container, namespace, pod, err)
	}
	id := ""
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == container && st.State.Running != nil {
			id = strings.TrimPrefix(st.ContainerID, "containerd://")
		}
	}
	if id == "" || p.Spec.NodeName == "" {
		return fmt.Errorf("sending %s to container %s of %s/%s: not running", signal, container, namespace, pod)
	}
	sock := filepath.Join(r.stateDir, "nodes", p.Spec.NodeName, "containerd.sock")
	out, err := exec.CommandContext(ctx, "ctr", "--address", sock, "--namespace", "k8s.io",
		"tasks", "kill", "--all", "--signal", signal, id).CombinedOutput()
	if err != nil {
		return fmt.Errorf("sending %s to container %s of %s/%s (%s): %w: %s", signal, container, namespace, pod, id, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RequireContainerSignals returns the signal injector or skips the test when the cluster tool
// provides none (the container fault injector provides both).
func (f *Test) RequireContainerSignals() ContainerSignals {
	f.T.Helper()
	s, _ := f.Cluster.Containers.(ContainerSignals)
	return require(f.T, s, "container signals")
}
