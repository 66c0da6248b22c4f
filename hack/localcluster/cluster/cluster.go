package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
)

// DefaultNodes is the number of nodes up creates: enough for anti-affinity across three etcd
// members and for losing one node.
const DefaultNodes = 3

// Options configure a Cluster. The zero value is the default cluster.
type Options struct {
	// Nodes is the number of nodes; 0 means DefaultNodes.
	Nodes int
	// CacheDir holds binaries and the cluster's state; "" means pinned.DefaultCacheDir().
	CacheDir string
	// RepoRoot is the repository root; "" means the one holding the current directory.
	RepoRoot string
	// Log receives progress lines; nil means os.Stderr.
	Log io.Writer
}

// Cluster is the local cluster. Its methods are safe to call from tests while the CLI also
// manages the same cluster: all state lives in files and processes, not in the value.
type Cluster struct {
	layout   layout
	nodes    []Node
	repoRoot string
	cacheDir string
	log      io.Writer
	builder  *pinned.Builder
	versions pinned.Versions

	// Binary folders, resolved by resolveBinaries.
	kubeDir    string
	apiEtcdDir string
	coreDNSDir string
	etcdDirs   map[string]string
	// certManagerDir holds cert-manager's controllers, built from hack/certmanager at
	// certManagerVersion (read from its go.mod).
	certManagerDir, certManagerVersion string
}

// New returns the cluster described by opts. It does not touch the machine.
func New(opts Options) (*Cluster, error) {
	if opts.Nodes == 0 {
		opts.Nodes = DefaultNodes
	}
	if opts.Nodes < 1 || opts.Nodes > 50 {
		return nil, fmt.Errorf("nodes: %d is out of range 1..50", opts.Nodes)
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.RepoRoot == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if opts.RepoRoot, err = pinned.FindRepoRoot(wd); err != nil {
			return nil, err
		}
	}
	if opts.CacheDir == "" {
		dir, err := pinned.DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		opts.CacheDir = dir
	}
	versions, err := pinned.LoadVersions(opts.RepoRoot)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		layout:   layout{root: filepath.Join(opts.CacheDir, "localcluster")},
		repoRoot: opts.RepoRoot,
		cacheDir: opts.CacheDir,
		log:      opts.Log,
		versions: versions,
		builder:  pinned.NewBuilder(opts.CacheDir, versions, opts.Log),
	}
	for i := range opts.Nodes {
		c.nodes = append(c.nodes, newNode(i))
	}
	// Unix socket paths are limited to 107 bytes; containerd adds ".ttrpc" to its socket.
	if sock := c.layout.containerdSocket(c.nodes[len(c.nodes)-1]) + ".ttrpc"; len(sock) > 107 {
		return nil, fmt.Errorf("socket path %s is longer than 107 bytes: set ETCD_OPERATOR_CACHE to a shorter folder", sock)
	}
	return c, nil
}

// Kubeconfig is the path of the cluster admin's kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.layout.kubeconfig() }

// StateDir is the folder that holds everything one cluster lifetime creates.
func (c *Cluster) StateDir() string { return c.layout.state() }

// LogDir is the folder of the components' logs; they survive down for post-mortems.
func (c *Cluster) LogDir() string { return c.layout.logs() }

// AuditLogPath is the API server's audit log: one JSON event (audit.k8s.io/v1, Metadata
// level) per create, update, patch, delete or deletecollection request, written when the
// response is complete. It lives in the state folder, so down deletes it. At
// AuditLogMaxSizeMB the API server renames it to audit-<time>.log beside it and starts a new
// one; AuditLogFiles lists them all.
func (c *Cluster) AuditLogPath() string { return c.layout.auditLog() }

// AuditLogFiles lists the audit log and its rotated backups, oldest first.
func (c *Cluster) AuditLogFiles() ([]string, error) {
	backups, err := filepath.Glob(filepath.Join(c.layout.audit(), "audit-*.log"))
	if err != nil {
		return nil, err
	}
	// Backups are named audit-<UTC time>.log, so lexical order is age order.
	sort.Strings(backups)
	files := backups
	if _, err := os.Stat(c.layout.auditLog()); err == nil {
		files = append(files, c.layout.auditLog())
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return files, nil
}

// CoreDNSLogPath is CoreDNS's log. Its log plugin writes one line per query received, as
// `[INFO] <client ip>:<port> - <id> "<type> IN <name> <proto> ..." <rcode> ...`; a Pod's
// queries carry the Pod's IP (there is no masquerading). It grows for the cluster's lifetime
// and starts afresh with a new cluster.
func (c *Cluster) CoreDNSLogPath() string { return c.layout.logFile(coreDNSName) }

func (c *Cluster) logf(format string, args ...any) {
	// Progress only: a failing log writer must not fail the command.
	_, _ = fmt.Fprintf(c.log, "localcluster: "+format+"\n", args...)
}

// step runs fn and logs how long it took.
func (c *Cluster) step(name string, fn func() error) error {
	start := time.Now()
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.logf("%-46s %6.1fs", name, time.Since(start).Seconds())
	return nil
}

// resolveBinaries builds or finds every binary the cluster runs.
func (c *Cluster) resolveBinaries(ctx context.Context) error {
	var err error
	if c.kubeDir, err = c.builder.Kubernetes(ctx); err != nil {
		return err
	}
	if c.coreDNSDir, err = c.builder.CoreDNS(ctx); err != nil {
		return err
	}
	c.etcdDirs = map[string]string{}
	for _, v := range c.versions.Etcd {
		if c.etcdDirs[v], err = c.builder.Etcd(ctx, v); err != nil {
			return err
		}
	}
	if c.apiEtcdDir, err = c.builder.Etcd(ctx, c.versions.EnvtestEtcd); err != nil {
		return err
	}
	if c.certManagerVersion, err = pinned.CertManagerVersion(c.repoRoot); err != nil {
		return err
	}
	c.certManagerDir, err = c.builder.CertManager(ctx, c.repoRoot)
	return err
}

// Up builds what is missing and starts the cluster, then waits until every node is Ready and
// CoreDNS answers. Running it on a cluster that is up changes nothing and starts only
// components that died.
func (c *Cluster) Up(ctx context.Context) error {
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	start := time.Now()
	if _, err := os.Stat(c.layout.state()); errors.Is(err, os.ErrNotExist) {
		// A new cluster: start its logs afresh (a running cluster keeps appending).
		if err := os.RemoveAll(c.layout.logs()); err != nil {
			return err
		}
	}
	// Image archives (which rebuild the operator when its source changed) are built while
	// the control plane starts; only the import waits for them.
	var (
		archives    []string
		archivesErr error
		archived    = make(chan struct{})
		started     bool
	)
	defer func() {
		if started {
			<-archived // never leave a writer of the archives behind the lock
		}
	}()
	buildArchives := func() error {
		started = true
		go func() {
			defer close(archived)
			t := time.Now()
			archives, archivesErr = c.buildImages(ctx, c.etcdDirs)
			c.logf("%-46s %6.1fs", "(image archives, in parallel)", time.Since(t).Seconds())
		}()
		return nil
	}
	importImages := func() error {
		return c.startAPIServerAndImport(ctx, func() ([]string, error) {
			<-archived
			return archives, archivesErr
		})
	}
	steps := []struct {
		name string
		fn   func() error
	}{
		{"host packages", func() error { return c.ensurePackages(ctx) }},
		{"binaries (built once, cached)", func() error { return c.resolveBinaries(ctx) }},
		{"image archives started", buildArchives},
		{"network (bridges, routes, guard rule)", func() error { return c.setUpNetwork(ctx) }},
		{"certificates and kubeconfigs", c.ensurePKI},
		{"configuration files", c.writeFiles},
		{"etcd, containerd of every node", func() error { return c.startEtcdAndRuntimes(ctx) }},
		{"kube-apiserver ready, images imported", importImages},
		{"cluster objects (RBAC, storage)", func() error { return c.bootstrap(ctx) }},
		{"controllers, kubelets, kube-proxy, CoreDNS", func() error { return c.startRest(ctx) }},
		{"nodes Ready and DNS answering", func() error { return c.waitReady(ctx, 3*time.Minute) }},
	}
	for _, s := range steps {
		if err := c.step(s.name, s.fn); err != nil {
			return fmt.Errorf("%w\n(component logs: %s; clean up with `make cluster-down`)", err, c.layout.logs())
		}
	}
	c.logf("cluster up in %.1fs with %d Ready nodes", time.Since(start).Seconds(), len(c.nodes))
	return nil
}

func (c *Cluster) writeFiles() error {
	if err := os.MkdirAll(filepath.Dir(c.layout.kubeProxyBinary()), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(c.layout.kubeProxyBinary(), []byte(c.kube("kube-proxy")), 0o644); err != nil {
		return err
	}
	if err := c.writeControlPlaneFiles(); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := c.writeNodeFiles(n); err != nil {
			return err
		}
	}
	return nil
}

// forEachNode runs fn for every node in parallel and joins the errors.
func (c *Cluster) forEachNode(fn func(Node) error) error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = fn(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Cluster) startEtcdAndRuntimes(ctx context.Context) error {
	if _, err := c.start(ctx, c.etcdProcess()); err != nil {
		return err
	}
	if err := c.forEachNode(func(n Node) error { return c.startContainerd(ctx, n) }); err != nil {
		return err
	}
	return c.waitEtcd(ctx, 30*time.Second)
}

func (c *Cluster) startAPIServerAndImport(ctx context.Context, archives func() ([]string, error)) error {
	if _, err := c.start(ctx, c.apiServerProcess()); err != nil {
		return err
	}
	importErr := make(chan error, 1)
	go func() {
		paths, err := archives()
		if err != nil {
			importErr <- fmt.Errorf("building image archives: %w", err)
			return
		}
		importErr <- c.forEachNode(func(n Node) error { return c.importImages(ctx, n, paths) })
	}()
	return errors.Join(c.waitAPIServer(ctx, 90*time.Second), <-importErr)
}

func (c *Cluster) startRest(ctx context.Context) error {
	if err := c.rotateCoreDNSLog(ctx); err != nil {
		return err
	}
	// The resizer is this repository's code: built on every up (the Go build cache makes an
	// unchanged one cheap), restarted when the binary changed.
	if err := os.MkdirAll(filepath.Dir(c.layout.resizerBinary()), 0o755); err != nil {
		return err
	}
	if err := c.goBuildStatic(ctx, "./hack/localcluster/resizer", c.layout.resizerBinary()); err != nil {
		return err
	}
	procs := []process{c.controllerManagerProcess(), c.schedulerProcess(), c.kubeProxyProcess(), c.coreDNSProcess(), c.resizerProcess()}
	for _, n := range c.nodes {
		procs = append(procs, c.kubeletProcess(n))
	}
	for _, p := range procs {
		if _, err := c.start(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// Down stops every process of the cluster, removes its bridges, routes, iptables rules, mounts
// and network namespaces, restores the sysctls it changed and deletes its state. Images
// imported into the nodes' containerd stay cached for the next up; logs stay for post-mortems.
func (c *Cluster) Down(ctx context.Context) error {
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	start := time.Now()
	var errs []error
	l := c.layout
	// Host-wide components first, then the nodes, then the API server before its etcd:
	// kube-apiserver hangs on shutdown when etcd is already gone.
	for _, name := range []string{resizerName, coreDNSName, kubeProxyName, schedulerName, controllerMgrName} {
		errs = append(errs, l.stop(ctx, name, 10*time.Second))
	}
	errs = append(errs, c.cleanUpKubeProxyRules(ctx))
	errs = append(errs, c.forEachNode(func(n Node) error {
		return errors.Join(l.stop(ctx, kubeletComponent(n), 10*time.Second), c.stopRuntime(ctx, n, true))
	}))
	// After the kubelets stopped, or they would recreate their chains.
	errs = append(errs, removeKubeChains(ctx))
	errs = append(errs, l.stop(ctx, apiServerName, 20*time.Second))
	errs = append(errs, l.stop(ctx, etcdName, 10*time.Second))
	errs = append(errs, c.killShims(ctx))
	errs = append(errs, c.tearDownNetwork(ctx))
	errs = append(errs, unmountUnder(l.root))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster down left things behind; run it again, and see `make cluster-status`: %w", err)
	}
	if err := os.RemoveAll(l.state()); err != nil {
		return fmt.Errorf("removing %s: %w", l.state(), err)
	}
	if err := os.Remove(l.kubeconfig()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	c.logf("cluster down in %.1fs", time.Since(start).Seconds())
	return nil
}

// cleanUpKubeProxyRules removes every KUBE-* chain and rule kube-proxy created, with the
// kube-proxy binary that up recorded: down must work without building anything.
func (c *Cluster) cleanUpKubeProxyRules(ctx context.Context) error {
	bin, err := os.ReadFile(c.layout.kubeProxyBinary())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = runTool(ctx, strings.TrimSpace(string(bin)), "--cleanup", "--v=0")
	return err
}

// killShims ends containerd shims of this cluster's nodes that outlived their containerd (a
// shim whose task was not deleted keeps running on its own).
func (c *Cluster) killShims(ctx context.Context) error {
	var errs []error
	for _, pid := range shimPids(c.layout.root) {
		errs = append(errs, terminate(ctx, pid, 2*time.Second))
	}
	return errors.Join(errs...)
}

// shimPids lists processes whose command line names a socket under root: the shims, which
// are started with -address <containerd socket>.
func shimPids(root string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.Contains(filepath.Base(args[0]), "containerd-shim") && strings.Contains(string(cmdline), root) {
			pids = append(pids, pid)
		}
	}
	return pids
}
