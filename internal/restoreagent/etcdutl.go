package restoreagent

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// maxEtcdutlOutput is how much of etcdutl's output a failure quotes: its last lines say why.
const maxEtcdutlOutput = 600

// resolveEtcdutl finds etcdutl before anything is downloaded: the path the Pod names (the
// official etcd images keep it next to etcd, in /usr/local/bin), else etcdutl in PATH. An image
// without it (etcd before 3.5) cannot restore.
func resolveEtcdutl(path string, lookPath func(string) (string, error)) (string, error) {
	if path == "" {
		found, err := lookPath(restore.EtcdutlName)
		if err != nil {
			return "", snapshot.Failf(restore.ReasonEtcdutlNotFound, "etcdutl is not in PATH of the etcd image: %w", err)
		}
		return found, nil
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", snapshot.Failf(restore.ReasonEtcdutlNotFound, "%s=%s is not an executable in the etcd image: %v", restore.EnvEtcdutl, path, err)
	}
	return path, nil
}

// etcdutlArgs are the arguments of `etcdutl snapshot restore`: the seed's own identity, so that
// the membership written into the restored data is the one etcd starts with, and a fresh
// cluster token, from which etcd derives a new cluster ID. The snapshot's integrity hash is
// checked (no --skip-hash-check): a snapshot without one (a copied database file) is refused.
func etcdutlArgs(cfg restore.Config, file, staging string) []string {
	return []string{"snapshot", "restore", file,
		"--name", cfg.Name,
		"--initial-cluster", cfg.InitialCluster,
		"--initial-cluster-token", cfg.ClusterToken,
		"--initial-advertise-peer-urls", cfg.PeerURL,
		"--data-dir", staging,
	}
}

// runEtcdutl restores file into staging.
func runEtcdutl(ctx context.Context, etcdutl string, cfg restore.Config, file, staging string) error {
	cmd := exec.CommandContext(ctx, etcdutl, etcdutlArgs(cfg, file, staging)...) //nolint:gosec // G204: the image's etcdutl with the seed's flags
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return snapshot.Failf(restore.ReasonEtcdutlFailed, "etcdutl snapshot restore failed (%v): %s", err, tail(out.String(), maxEtcdutlOutput))
	}
	return nil
}

// tail returns the end of s, at most n bytes, from a line start when there is one.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return "…" + s
}
