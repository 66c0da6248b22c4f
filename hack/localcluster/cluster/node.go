package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// unreachableProxy is an address where nothing listens. containerd sends every registry
// request to it, so an image that was not imported fails to pull at once, without resolving
// the registry's name through the host's resolver or sending anything off this machine.
const unreachableProxy = "http://127.0.0.1:9"

// containerdConfig gives node its own root, state, socket and CNI configuration. The CRI
// settings are the ones this machine needs (docs/local-cluster.md): negative oom_score_adj is
// denied in this VM, so restrict_oom_score_adj; cgroupfs, not systemd; the local pause image.
func (c *Cluster) containerdConfig(n Node) string {
	l := c.layout
	return fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  stream_server_address = %q
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, l.containerdRoot(n), l.containerdState(n), l.containerdSocket(n), l.containerdSocket(n)+".ttrpc",
		filepath.Join(l.node(n), "opt"), PauseImage, n.IP, filepath.Join(l.node(n), "runc"), filepath.Join(l.node(n), "cni"))
}

// cniConfig attaches node's Pods to its own bridge and subnet. Pods get no default route, only
// routes to the Service, node and Pod ranges, and no masquerading: nothing can leave the host.
func (c *Cluster) cniConfig(n Node) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": %q,
      "ranges": [[{"subnet": %q, "gateway": %q}]],
      "routes": [{"dst": %q}, {"dst": %q}, {"dst": %q}]
    }
  }]
}
`, n.Name, n.CNIBridge, filepath.Join(c.layout.node(n), "cni-ipam"), n.PodSubnet, n.PodGateway, ServiceCIDR, NodeCIDR, PodCIDR)
}

// kubeletConfig is node's KubeletConfiguration. Several kubelets share this host, so each one
// serves on its own node IP and keeps its own root, Pod log folder and volume plugin folder.
// cgroupsPerQOS is off: the kubelets would otherwise share one /kubepods hierarchy and each
// would remove the others' Pod cgroups as orphans.
func (c *Cluster) kubeletConfig(n Node) string {
	l := c.layout
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: %[1]s
healthzPort: %[3]d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[4]s
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://%[5]s
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
clusterDomain: %[6]s
clusterDNS: [%[7]s]
resolvConf: %[8]s
podLogsDir: %[9]s
volumePluginDir: %[10]s
hairpinMode: hairpin-veth
serializeImagePulls: false
nodeLeaseDurationSeconds: 20
nodeStatusUpdateFrequency: 4s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
shutdownGracePeriod: 0s
`, n.IP, kubeletPort, kubeletHealthzPort, filepath.Join(l.pki(), "ca.crt"), l.containerdSocket(n),
		DNSDomain, ControlPlaneIP, filepath.Join(l.node(n), "resolv.conf"), filepath.Join(l.node(n), "pod-logs"),
		filepath.Join(l.node(n), "volume-plugins"))
}

// writeNodeFiles writes node's configuration files.
func (c *Cluster) writeNodeFiles(n Node) error {
	l := c.layout
	files := map[string]string{
		filepath.Join(l.node(n), "containerd.toml"):           c.containerdConfig(n),
		filepath.Join(l.node(n), "cni", "10-bridge.conflist"): c.cniConfig(n),
		filepath.Join(l.node(n), "kubelet.yaml"):              c.kubeletConfig(n),
		// Empty: Pods get CoreDNS only, never the host's upstream resolver.
		filepath.Join(l.node(n), "resolv.conf"): "",
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, dir := range []string{l.containerdRoot(n), l.kubeletRoot(n), l.volumes(n)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) containerdProcess(n Node) process {
	return process{
		name: containerdComponent(n),
		bin:  "/usr/bin/containerd",
		args: []string{"--config", filepath.Join(c.layout.node(n), "containerd.toml")},
		env:  []string{"HTTP_PROXY=" + unreachableProxy, "HTTPS_PROXY=" + unreachableProxy, "NO_PROXY=", "no_proxy="},
	}
}

func (c *Cluster) kubeletProcess(n Node) process {
	l := c.layout
	return process{
		name: kubeletComponent(n),
		bin:  c.kube("kubelet"),
		args: []string{
			"--config=" + filepath.Join(l.node(n), "kubelet.yaml"),
			"--kubeconfig=" + c.kubeconfigPath(nodeIdentity(n)),
			"--root-dir=" + l.kubeletRoot(n),
			"--hostname-override=" + n.Name,
			"--node-ip=" + n.IP,
			"--node-labels=topology.kubernetes.io/zone=" + n.Zone,
			"--v=1",
		},
	}
}

// startContainerd starts node's containerd and waits for its socket to answer.
func (c *Cluster) startContainerd(ctx context.Context, n Node) error {
	if _, err := c.start(ctx, c.containerdProcess(n)); err != nil {
		return err
	}
	return wait.Poll(ctx, pollInterval, 30*time.Second, fmt.Sprintf("containerd of %s (log: %s)", n.Name, c.layout.logFile(containerdComponent(n))), func() (bool, error) {
		_, err := c.ctr(ctx, n, "version")
		return err == nil, nil
	})
}

func (c *Cluster) ctr(ctx context.Context, n Node, args ...string) (string, error) {
	return runTool(ctx, "ctr", append([]string{"--address", c.layout.containerdSocket(n), "--namespace", "k8s.io"}, args...)...)
}

// ContainerdSocket is the socket of the named node's containerd, for fault injection with
// `ctr --address <socket> --namespace k8s.io`.
func (c *Cluster) ContainerdSocket(node string) (string, error) {
	n, err := c.nodeNamed(node)
	if err != nil {
		return "", err
	}
	return c.layout.containerdSocket(n), nil
}

// Nodes lists the cluster's nodes.
func (c *Cluster) Nodes() []Node { return append([]Node(nil), c.nodes...) }

func (c *Cluster) nodeNamed(name string) (Node, error) {
	for _, n := range c.nodes {
		if n.Name == name {
			return n, nil
		}
	}
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.Name
	}
	return Node{}, fmt.Errorf("no node %q; nodes are %s", name, strings.Join(names, ", "))
}

// StopNode simulates the loss of one node: it kills the node's kubelet, kills and deletes
// every container task in the node's containerd and stops that containerd, as if the machine
// had died. The node goes NotReady once its lease expires (about 20 s); its Pods stay bound to
// it in the API, as on a real node loss. StartNode brings it back.
func (c *Cluster) StopNode(ctx context.Context, name string) error {
	n, err := c.nodeNamed(name)
	if err != nil {
		return err
	}
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.layout.stop(ctx, kubeletComponent(n), 0); err != nil {
		return err
	}
	return c.stopRuntime(ctx, n, false)
}

// StartNode restarts a node stopped by StopNode: its containerd, then its kubelet, which
// recreates the node's Pods. It does not wait for the node to become Ready.
func (c *Cluster) StartNode(ctx context.Context, name string) error {
	n, err := c.nodeNamed(name)
	if err != nil {
		return err
	}
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if c.kubeDir == "" {
		// Cached after the first up: this only checks the stamps.
		if c.kubeDir, err = c.builder.Kubernetes(ctx); err != nil {
			return err
		}
	}
	if err := c.startContainerd(ctx, n); err != nil {
		return err
	}
	_, err = c.start(ctx, c.kubeletProcess(n))
	return err
}

// stopRuntime kills node's containers, deletes their tasks (which ends their shims), and
// stops containerd. With removeContainers, it also deletes the containers, so the next
// cluster starts from a clean runtime while keeping the imported images.
func (c *Cluster) stopRuntime(ctx context.Context, n Node, removeContainers bool) error {
	if _, ok := c.layout.running(containerdComponent(n)); !ok {
		return c.layout.stop(ctx, containerdComponent(n), 0)
	}
	if err := c.deleteTasks(ctx, n); err != nil {
		return err
	}
	if removeContainers {
		out, err := c.ctr(ctx, n, "containers", "ls", "-q")
		if err != nil {
			return err
		}
		for _, id := range strings.Fields(out) {
			if _, err := c.ctr(ctx, n, "containers", "delete", id); err != nil {
				return err
			}
		}
	}
	return c.layout.stop(ctx, containerdComponent(n), 10*time.Second)
}

// deleteTasks kills every container of node and deletes their tasks, which ends the shims.
func (c *Cluster) deleteTasks(ctx context.Context, n Node) error {
	out, err := c.ctr(ctx, n, "tasks", "ls", "-q")
	if err != nil {
		return err
	}
	tasks := strings.Fields(out)
	for _, id := range tasks {
		// A task that already exited refuses the signal; delete below handles it.
		_, _ = c.ctr(ctx, n, "tasks", "kill", "--signal", "SIGKILL", id)
	}
	for _, id := range tasks {
		err := wait.Poll(ctx, pollInterval, 10*time.Second, "task "+id+" to exit", func() (bool, error) {
			// The CRI plugin deletes a task itself once it sees it exit.
			out, err := c.ctr(ctx, n, "tasks", "delete", id)
			if err != nil && strings.Contains(out, "not found") {
				return true, nil
			}
			return err == nil, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
