package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// hostPackages maps each Debian package the cluster needs to a file that proves it installed.
var hostPackages = map[string]string{
	"containerd":                  "/usr/bin/containerd",
	"runc":                        "/usr/sbin/runc",
	"containernetworking-plugins": "/usr/lib/cni/bridge",
	"iptables":                    "/usr/sbin/iptables",
	"conntrack":                   "/usr/sbin/conntrack",
	"socat":                       "/usr/bin/socat",
}

// ensurePackages installs the missing host packages with apt, refreshing the package lists
// first (a fresh machine has none).
func (c *Cluster) ensurePackages(ctx context.Context) error {
	var missing []string
	for pkg, file := range hostPackages {
		if _, err := os.Stat(file); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	c.logf("installing host packages: %s", strings.Join(missing, " "))
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("install %s: apt-get not found (the local cluster needs Debian or Ubuntu)", strings.Join(missing, " "))
	}
	if _, err := runTool(ctx, "apt-get", "update", "-qq"); err != nil {
		return err
	}
	args := append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %w\n%s", strings.Join(missing, " "), err, out)
	}
	return nil
}
