package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// componentNames lists every process of the cluster, in start order.
func (c *Cluster) componentNames() []string {
	names := []string{etcdName, apiServerName, controllerMgrName, schedulerName, kubeProxyName, coreDNSName, resizerName}
	for _, n := range c.nodes {
		names = append(names, containerdComponent(n), kubeletComponent(n))
	}
	return names
}

// Status writes each component's process state and memory, each node's readiness and whether
// DNS answers. It returns an error when the cluster is not fully up.
func (c *Cluster) Status(ctx context.Context, w io.Writer) error {
	rows := [][]string{{"COMPONENT", "PID", "STATE", "RSS"}}
	down := 0
	for _, name := range c.componentNames() {
		pid, ok := c.layout.running(name)
		if !ok {
			down++
			rows = append(rows, []string{name, "-", "stopped", "-"})
			continue
		}
		rows = append(rows, []string{name, strconv.Itoa(pid), "running", mib(rssBytes(pid))})
	}
	rows = append(rows, []string{"all cluster processes", "", "", mib(c.MemoryRSS())})
	if err := writeTable(w, rows); err != nil {
		return err
	}
	if down == len(c.componentNames()) {
		return fmt.Errorf("the cluster is down (start it with `make cluster-up`)")
	}
	cs, err := c.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	rows = [][]string{{"", "", "", ""}, {"NODE", "INTERNAL-IP", "READY", "VERSION"}}
	for _, n := range nodes.Items {
		ready := "False"
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				ready = string(cond.Status)
			}
		}
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		rows = append(rows, []string{n.Name, ip, ready, n.Status.NodeInfo.KubeletVersion})
	}
	if err := writeTable(w, rows); err != nil {
		return err
	}
	dns := "answering"
	if addrs, err := c.LookupHost(ctx, "kubernetes.default.svc."+DNSDomain); err != nil || len(addrs) == 0 {
		dns = fmt.Sprintf("NOT answering (%v)", err)
	}
	if _, err := fmt.Fprintf(w, "\nDNS (CoreDNS on %s:53): %s\nkubeconfig: %s\nlogs: %s\n", ControlPlaneIP, dns, c.Kubeconfig(), c.layout.logs()); err != nil {
		return err
	}
	if down > 0 || countReady(nodes.Items) != len(c.nodes) || dns != "answering" {
		return fmt.Errorf("the cluster is not fully up: %d components stopped, %d of %d nodes Ready, DNS %s",
			down, countReady(nodes.Items), len(c.nodes), dns)
	}
	return nil
}

// writeTable writes rows as aligned columns.
func writeTable(w io.Writer, rows [][]string) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, row := range rows {
		// Writes to a strings.Builder cannot fail; Flush reports any error.
		_, _ = tw.Write([]byte(strings.Join(row, "\t") + "\n"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MemoryRSS sums the resident memory of every cluster process, including containerd shims
// and the Pods' containers (all descendants of the components).
func (c *Cluster) MemoryRSS() int64 {
	roots := map[int]bool{}
	for _, name := range c.componentNames() {
		if pid, ok := c.layout.running(name); ok {
			roots[pid] = true
		}
	}
	for _, pid := range shimPids(c.layout.root) {
		roots[pid] = true
	}
	var total int64
	for pid := range withDescendants(roots) {
		total += rssBytes(pid)
	}
	return total
}

// withDescendants adds every descendant of roots.
func withDescendants(roots map[int]bool) map[int]bool {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		if ppid := parentPid(pid); ppid > 0 {
			children[ppid] = append(children[ppid], pid)
		}
	}
	all := map[int]bool{}
	var visit func(int)
	visit = func(pid int) {
		if all[pid] {
			return
		}
		all[pid] = true
		for _, child := range children[pid] {
			visit(child)
		}
	}
	for pid := range roots {
		visit(pid)
	}
	return all
}

func parentPid(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0
	}
	var state string
	var ppid int
	if _, err := fmt.Sscanf(string(stat[i+2:]), "%s %d", &state, &ppid); err != nil {
		return 0
	}
	return ppid
}

func rssBytes(pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			// "VmRSS:	  12345 kB"
			kb, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

func mib(b int64) string { return fmt.Sprintf("%d MiB", b/(1<<20)) }

// Leftovers lists everything of the cluster that still exists on the machine: processes,
// links, iptables rules, routes, mounts, network namespaces and unrestored sysctls. After Down
// it must be empty; the down test asserts that.
func (c *Cluster) Leftovers(ctx context.Context) ([]string, error) {
	left := c.leftoverProcesses()
	links, err := ownedLinks(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		left = append(left, "link "+l)
	}
	rules, err := leftoverRules(ctx)
	if err != nil {
		return nil, err
	}
	left = append(left, rules...)
	routes, err := leftoverRoutes(ctx)
	if err != nil {
		return nil, err
	}
	left = append(left, routes...)
	mounts, err := mountsUnder(c.layout.root)
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		left = append(left, "mount "+m)
	}
	netns, err := podNetworkNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	for _, ns := range netns {
		left = append(left, "netns "+ns)
	}
	if _, err := os.Stat(c.layout.sysctlsSaved()); err == nil {
		left = append(left, "sysctls not restored (saved in "+c.layout.sysctlsSaved()+")")
	}
	sort.Strings(left)
	return left, nil
}

// leftoverProcesses finds components by pid file, shims by socket path, and, in case a pid
// file was lost, any process running the cached kubelet or kube-apiserver.
func (c *Cluster) leftoverProcesses() []string {
	var left []string
	for _, name := range c.componentNames() {
		if pid, ok := c.layout.running(name); ok {
			left = append(left, fmt.Sprintf("process %s (pid %d)", name, pid))
		}
	}
	for _, pid := range shimPids(c.layout.root) {
		left = append(left, fmt.Sprintf("containerd shim (pid %d)", pid))
	}
	for _, bin := range []string{c.kubeDirOrCache("kubelet"), c.kubeDirOrCache("kube-apiserver")} {
		for _, pid := range pidsOf(bin) {
			left = append(left, fmt.Sprintf("process %s (pid %d)", bin, pid))
		}
	}
	return left
}

// leftoverRules lists KUBE-* chains and rules, the guard rule and any rule naming the Pod range.
func leftoverRules(ctx context.Context) ([]string, error) {
	var left []string
	for _, family := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			out, err := runTool(ctx, family+"-save", "-t", table)
			if err != nil {
				return nil, err
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "KUBE-") || strings.Contains(line, "etcd-operator local cluster") || strings.Contains(line, PodCIDR) {
					left = append(left, family+" "+table+": "+line)
				}
			}
		}
	}
	return left, nil
}

// leftoverRoutes lists routes into the cluster's ranges.
func leftoverRoutes(ctx context.Context) ([]string, error) {
	out, err := runTool(ctx, "ip", "route", "show")
	if err != nil {
		return nil, err
	}
	var left []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "10.200.") || strings.Contains(line, "10.244.") || strings.Contains(line, "10.96.") {
			left = append(left, "route "+line)
		}
	}
	return left, nil
}

// kubeDirOrCache is the path binary has in the cache's Kubernetes folder.
func (c *Cluster) kubeDirOrCache(binary string) string {
	return filepath.Join(c.cacheDir, "bin", "kubernetes-v"+c.versions.Kubernetes, binary)
}

// pidsOf lists live processes running the executable at path.
func pidsOf(path string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
