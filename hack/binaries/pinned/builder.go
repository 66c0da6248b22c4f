package pinned

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Builder builds and caches pinned binaries under CacheDir.
type Builder struct {
	cacheDir string
	versions Versions
	log      io.Writer
}

// NewBuilder returns a Builder that caches under cacheDir, builds versions, and reports
// progress and timings to log (stderr in the CLI, so stdout carries only paths).
func NewBuilder(cacheDir string, versions Versions, log io.Writer) *Builder {
	return &Builder{cacheDir: cacheDir, versions: versions, log: log}
}

// logf reports progress; a failing log writer must not fail a build.
func (b *Builder) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(b.log, "hack/binaries: "+format+"\n", args...)
}

// Versions returns the pinned versions the Builder builds.
func (b *Builder) Versions() Versions { return b.versions }

// KubernetesBinaries are the Kubernetes commands a local cluster needs.
var KubernetesBinaries = []string{
	"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl",
}

// EtcdBinaries are the commands built for each etcd release.
var EtcdBinaries = []string{"etcd", "etcdctl", "etcdutl"}

// binarySet is one upstream module release and the commands built from it.
type binarySet struct {
	// name labels the cache folders, such as kubernetes-v1.35.4.
	name string
	// packages maps each binary name to the main package that builds it.
	packages map[string]string
	ldflags  string
	// goMod renders the tools module's go.mod; it may download the upstream go.mod.
	goMod func(ctx context.Context) ([]byte, error)
	// srcDir, when set, is a module of this repository that is built in place instead of a
	// generated tools module (certmanager.go); srcDigest, a digest of its files, enters the
	// recipe so that a change to it rebuilds.
	srcDir, srcDigest string
	// files are source files written into the generated tools module (path relative to it →
	// content), for a main of our own such as CoreDNS's (coredns.go); their digest enters the
	// recipe.
	files map[string]string
	// tags are the build tags, comma-separated (promtool.go); they enter the recipe.
	tags string
}

func (b *Builder) kubernetesSet() binarySet {
	v := b.versions.Kubernetes
	minor := strings.Split(v, ".")[1]
	pkgs := map[string]string{}
	for _, name := range KubernetesBinaries {
		pkgs[name] = "k8s.io/kubernetes/cmd/" + name
	}
	// Without these the binaries report v0.0.0-master, which breaks version skew checks
	// (kubectl warns, kubelet registration reports a nonsense version).
	var ldflags []string
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ldflags = append(ldflags,
			"-X "+p+".gitVersion=v"+v,
			"-X "+p+".gitMajor=1",
			"-X "+p+".gitMinor="+minor,
			"-X "+p+".gitTreeState=clean",
		)
	}
	return binarySet{
		name:     "kubernetes-v" + v,
		packages: pkgs,
		ldflags:  strings.Join(ldflags, " "),
		goMod: func(ctx context.Context) ([]byte, error) {
			upstream, err := b.upstreamGoModJSON(ctx, "k8s.io/kubernetes", "v"+v)
			if err != nil {
				return nil, err
			}
			return KubernetesToolsGoMod(upstream, v)
		},
	}
}

func (b *Builder) etcdSet(release string) binarySet {
	mod := func(sub string) Module { return Module{Path: "go.etcd.io/etcd/" + sub + "/v3", Version: "v" + release} }
	server, ctl, utl := mod("server"), mod("etcdctl"), mod("etcdutl")
	return binarySet{
		name:     "etcd-v" + release,
		packages: map[string]string{"etcd": server.Path, "etcdctl": ctl.Path, "etcdutl": utl.Path},
		goMod: func(context.Context) ([]byte, error) {
			return plainToolsGoMod(toolsGoVersion, server, ctl, utl), nil
		},
	}
}

// toolsGoVersion is the go line of tools modules that do not copy one from upstream; `go build
// -mod=mod` raises it when a dependency needs a newer language version.
const toolsGoVersion = "1.24"

// Kubernetes builds (or reuses) all KubernetesBinaries and returns their folder.
func (b *Builder) Kubernetes(ctx context.Context) (string, error) {
	return b.ensure(ctx, b.kubernetesSet(), KubernetesBinaries)
}

// Etcd builds (or reuses) EtcdBinaries at release and returns their folder.
func (b *Builder) Etcd(ctx context.Context, release string) (string, error) {
	if !releasePattern.MatchString(release) {
		return "", fmt.Errorf("etcd release %q: want x.y.z without a v prefix", release)
	}
	return b.ensure(ctx, b.etcdSet(release), EtcdBinaries)
}

// CoreDNS builds (or reuses) coredns and returns its folder.
func (b *Builder) CoreDNS(ctx context.Context) (string, error) {
	return b.ensure(ctx, b.coreDNSSet(), []string{"coredns"})
}

// Envtest builds (or reuses) what controller-runtime's envtest needs (etcd, kube-apiserver and
// kubectl) and returns one folder holding all three, to be used as KUBEBUILDER_ASSETS.
func (b *Builder) Envtest(ctx context.Context) (string, error) {
	kubeDir, err := b.ensure(ctx, b.kubernetesSet(), []string{"kube-apiserver", "kubectl"})
	if err != nil {
		return "", err
	}
	etcdDir, err := b.ensure(ctx, b.etcdSet(b.versions.EnvtestEtcd), []string{"etcd"})
	if err != nil {
		return "", err
	}
	dir := filepath.Join(b.cacheDir, "envtest", fmt.Sprintf("kubernetes-v%s-etcd-v%s", b.versions.Kubernetes, b.versions.EnvtestEtcd))
	sources := map[string]string{
		"kube-apiserver": filepath.Join(kubeDir, "kube-apiserver"),
		"kubectl":        filepath.Join(kubeDir, "kubectl"),
		"etcd":           filepath.Join(etcdDir, "etcd"),
	}
	if err := linkAll(dir, sources); err != nil {
		return "", fmt.Errorf("assembling envtest folder: %w", err)
	}
	return dir, nil
}

// linkAll makes dir hold a hard link to each source under its name. It relinks a name whose file
// is not the source, so a rebuilt binary replaces the stale one; rename keeps it atomic.
func linkAll(dir string, sources map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, src := range sources {
		dst := filepath.Join(dir, name)
		srcInfo, err := os.Stat(src)
		if err != nil {
			return err
		}
		if dstInfo, err := os.Stat(dst); err == nil && os.SameFile(srcInfo, dstInfo) {
			continue
		}
		tmp := fmt.Sprintf("%s.%d.tmp", dst, os.Getpid())
		_ = os.Remove(tmp)
		if err := os.Link(src, tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
	}
	return nil
}

// ensure returns the folder of set's binaries, building those of want that are not cached.
func (b *Builder) ensure(ctx context.Context, set binarySet, want []string) (string, error) {
	binDir := filepath.Join(b.cacheDir, "bin", set.name)
	goVersion, err := b.goVersion(ctx)
	if err != nil {
		return "", err
	}
	recipe := func(binary string) string { return recipeOf(set, binary, goVersion) }
	missing := func() []string {
		var m []string
		for _, bin := range want {
			if !isCached(binDir, bin, recipe(bin)) {
				m = append(m, bin)
			}
		}
		return m
	}
	if len(missing()) == 0 {
		return binDir, nil
	}
	unlock, err := lockCache(b.cacheDir, set.name, b.log)
	if err != nil {
		return "", err
	}
	defer unlock()
	todo := missing() // another process may have built them while we waited for the lock
	if len(todo) == 0 {
		return binDir, nil
	}
	if err := b.build(ctx, set, binDir, todo); err != nil {
		return "", fmt.Errorf("building %s (%s): %w", strings.Join(todo, ", "), set.name, err)
	}
	for _, bin := range todo {
		if err := writeFileAtomic(stampPath(binDir, bin), []byte(recipe(bin)), 0o644); err != nil {
			return "", err
		}
	}
	return binDir, nil
}

// recipeOf is what builds binary of set with the Go toolchain goVersion; a cached binary whose
// stamp holds another recipe is rebuilt. Lines for optional inputs (source digest, generated
// files, build tags) appear only when set, so adding one kind of input leaves the recipes of
// the sets without it, and their cached binaries, as they were.
func recipeOf(set binarySet, binary, goVersion string) string {
	r := fmt.Sprintf("package=%s\ngo=%s\nldflags=%s\nenv=CGO_ENABLED=0 -trimpath\n", set.packages[binary], goVersion, set.ldflags)
	if set.srcDigest != "" {
		r += "source=" + set.srcDigest + "\n"
	}
	if len(set.files) > 0 {
		r += "files=" + filesDigest(set.files) + "\n"
	}
	if set.tags != "" {
		r += "tags=" + set.tags + "\n"
	}
	return r
}

// build compiles binaries of set into binDir. Binaries go to a scratch folder first and are
// renamed into place, so binDir never holds a partial binary.
func (b *Builder) build(ctx context.Context, set binarySet, binDir string, binaries []string) error {
	start := time.Now()
	b.logf("building %s from %s (a first build downloads modules and takes minutes) ...", strings.Join(binaries, ", "), set.name)
	modDir, mode := set.srcDir, "-mod=readonly"
	if modDir == "" {
		modDir, mode = filepath.Join(b.cacheDir, "src", set.name), "-mod=mod"
		if err := b.writeToolsModule(ctx, set, modDir); err != nil {
			return err
		}
	}
	scratch, err := os.MkdirTemp(b.scratchParent(set, modDir), "out-")
	if err != nil {
		return fmt.Errorf("creating scratch folder: %w", err)
	}
	defer func() { _ = os.RemoveAll(scratch) }()

	args := []string{"build", mode, "-trimpath", "-o", scratch + string(os.PathSeparator)}
	if set.ldflags != "" {
		args = append(args, "-ldflags", set.ldflags)
	}
	if set.tags != "" {
		args = append(args, "-tags", set.tags)
	}
	for _, bin := range binaries {
		args = append(args, set.packages[bin])
	}
	if err := b.goCommand(ctx, modDir, args...).Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", binDir, err)
	}
	for _, bin := range binaries {
		built := filepath.Join(scratch, goBuildOutputName(set.packages[bin]))
		if err := os.Rename(built, filepath.Join(binDir, bin)); err != nil {
			return fmt.Errorf("moving %s into the cache: %w", bin, err)
		}
	}
	b.logf("built %s in %s", strings.Join(binaries, ", "), time.Since(start).Round(time.Second))
	return nil
}

// writeToolsModule writes set's generated go.mod into modDir. An existing go.mod whose
// requirements match is kept: `go build -mod=mod` has completed it and its go.sum, and rewriting
// it would throw that work away.
func (b *Builder) writeToolsModule(ctx context.Context, set binarySet, modDir string) error {
	if err := os.MkdirAll(modDir, 0o755); err != nil {
		return fmt.Errorf("creating tools module folder: %w", err)
	}
	for rel, content := range set.files {
		dst := filepath.Join(modDir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("creating tools module folder: %w", err)
		}
		if err := writeFileAtomic(dst, []byte(content), 0o644); err != nil {
			return err
		}
	}
	goMod, err := set.goMod(ctx)
	if err != nil {
		return err
	}
	seedPath := filepath.Join(modDir, "go.mod.seed")
	if old, err := os.ReadFile(seedPath); err == nil && bytes.Equal(old, goMod) {
		return nil
	}
	if err := writeFileAtomic(filepath.Join(modDir, "go.mod"), goMod, 0o644); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(modDir, "go.sum"))
	return writeFileAtomic(seedPath, goMod, 0o644)
}

// scratchParent is where a build's scratch output folder goes: the generated tools module,
// or, for a module of this repository, the cache (never the work tree).
func (b *Builder) scratchParent(set binarySet, modDir string) string {
	if set.srcDir == "" {
		return modDir
	}
	return b.cacheDir
}

var majorSuffix = regexp.MustCompile(`^v[0-9]+$`)

// goBuildOutputName is the file name `go build -o dir/` gives a main package: its last path
// element, skipping a major version suffix (go.etcd.io/etcd/server/v3 becomes "server").
func goBuildOutputName(pkg string) string {
	base := path.Base(pkg)
	if majorSuffix.MatchString(base) {
		base = path.Base(path.Dir(pkg))
	}
	return base
}

// goCommand runs go in dir, at low CPU priority (the machine is shared), static (CGO off), and
// isolated from the caller's module: no go.work, no toolchain downloads, no inherited GOFLAGS.
func (b *Builder) goCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	name, full := "go", args
	if nice, err := exec.LookPath("nice"); err == nil {
		name, full = nice, append([]string{"-n", "10", "go"}, args...)
	}
	cmd := exec.CommandContext(ctx, name, full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false")
	cmd.Stdout = b.log
	cmd.Stderr = b.log
	return cmd
}

// goVersion is the toolchain version that goes into each stamp, so a new Go rebuilds.
func (b *Builder) goVersion(ctx context.Context) (string, error) {
	var out bytes.Buffer
	cmd := b.goCommand(ctx, b.cacheDirOrRoot(), "env", "GOVERSION")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(out.String()), nil
}

func (b *Builder) cacheDirOrRoot() string {
	if _, err := os.Stat(b.cacheDir); err == nil {
		return b.cacheDir
	}
	return string(os.PathSeparator)
}

// upstreamGoModJSON downloads module@version and returns its go.mod as `go mod edit -json`.
func (b *Builder) upstreamGoModJSON(ctx context.Context, module, version string) ([]byte, error) {
	info, err := b.download(ctx, module, version)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd := b.goCommand(ctx, b.cacheDirOrRoot(), "mod", "edit", "-json", info.GoMod)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go mod edit -json %s: %w", info.GoMod, err)
	}
	return out.Bytes(), nil
}
