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

// NodeImageTags gives an image present on every node a second name, in each node's own
// container runtime. The local cluster has no registry, so this is how a test stands in for
// pushing a new tag of an image: a Pod that names the new tag (imagePullPolicy IfNotPresent)
// then starts from the same content under another reference.
type NodeImageTags interface {
	// TagImage makes target name the image source on every node; an existing target is
	// replaced.
	TagImage(ctx context.Context, source, target string) error
	// UntagImage removes the name target from every node; the content stays as long as
	// another name refers to it. A node without the name is not an error.
	UntagImage(ctx context.Context, target string) error
}

// TagImage implements NodeImageTags through each node's containerd, in the namespace the
// kubelet uses (k8s.io).
func (r *runtimeFaults) TagImage(ctx context.Context, source, target string) error {
	return r.onEveryNode(ctx, "tagging "+source+" as "+target, false, func(sock string) []string {
		return []string{"--address", sock, "--namespace", "k8s.io", "images", "tag", "--force", source, target}
	})
}

// UntagImage implements NodeImageTags.
func (r *runtimeFaults) UntagImage(ctx context.Context, target string) error {
	return r.onEveryNode(ctx, "removing image name "+target, true, func(sock string) []string {
		return []string{"--address", sock, "--namespace", "k8s.io", "images", "rm", target}
	})
}

// onEveryNode runs ctr with args(socket) against every node's containerd; with notFoundOK, a
// node that does not have the image is skipped.
func (r *runtimeFaults) onEveryNode(ctx context.Context, what string, notFoundOK bool, args func(sock string) []string) error {
	nodes, err := r.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("%s: listing nodes: %w", what, err)
	}
	for _, n := range nodes.Items {
		sock := filepath.Join(r.stateDir, "nodes", n.Name, "containerd.sock")
		out, err := exec.CommandContext(ctx, "ctr", args(sock)...).CombinedOutput()
		if err != nil && (!notFoundOK || !strings.Contains(string(out), "not found")) {
			return fmt.Errorf("%s on node %s: %w: %s", what, n.Name, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// RequireNodeImageTags returns the node image tagger or skips the test when the cluster tool
// provides none (the container fault injector provides it).
func (f *Test) RequireNodeImageTags() NodeImageTags {
	f.T.Helper()
	s, _ := f.Cluster.Containers.(NodeImageTags)
	return require(f.T, s, "node image tags")
}
