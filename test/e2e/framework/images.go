//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnvEtcdImage overrides the etcd image tests run for their own etcd fixtures.
const EnvEtcdImage = "E2E_ETCD_IMAGE"

// ErrNoImage means no node reports an image with the wanted name.
var ErrNoImage = errors.New("no node has the image")

// NodeImages returns the names of the images the nodes report as present, sorted. The local
// cluster has no registry, so an image is usable only if it was imported into the nodes'
// runtime; Pods then use imagePullPolicy Never.
func (s *Suite) NodeImages(ctx context.Context) ([]string, error) {
	nodes, err := s.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	seen := map[string]bool{}
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				seen[name] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// EtcdImage returns $E2E_ETCD_IMAGE, else the highest-sorting image on the nodes whose
// repository ends in "etcd" and whose tag contains version (e.g. "3.6"), skipping digests.
func (s *Suite) EtcdImage(ctx context.Context, getenv func(string) string, version string) (string, error) {
	if img := getenv(EnvEtcdImage); img != "" {
		return img, nil
	}
	images, err := s.NodeImages(ctx)
	if err != nil {
		return "", err
	}
	best := ""
	for _, name := range images {
		repo, tag, ok := splitImage(name)
		if !ok || !strings.HasSuffix(repo, "etcd") || !strings.Contains(tag, version) {
			continue
		}
		best = name
	}
	if best == "" {
		return "", fmt.Errorf("etcd %s: %w (set %s)", version, ErrNoImage, EnvEtcdImage)
	}
	return best, nil
}

// splitImage splits "repo[:port]/name:tag" at the tag's colon; digests do not count as tags.
func splitImage(name string) (repo, tag string, ok bool) {
	if strings.Contains(name, "@") {
		return "", "", false
	}
	i := strings.LastIndex(name, ":")
	if i < 0 || strings.Contains(name[i:], "/") {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}
