package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Images the cluster builds. Tags are never "latest", so IfNotPresent never pulls them.
const (
	// PauseImage is every Pod's sandbox image (containerd's sandbox_image).
	PauseImage = "localhost/etcd-operator-pause:v1"
	// OperatorImage is the operator built from the work tree by up.
	OperatorImage = "localhost/etcd-operator:dev"
	// EtcdImageRepository is the operator's default etcd repository; up builds
	// EtcdImageRepository:v<version> for every pinned etcd version.
	EtcdImageRepository = "quay.io/coreos/etcd"
)

// EtcdImage is the image of etcd release version (x.y.z), as up builds it.
func EtcdImage(version string) string { return EtcdImageRepository + ":v" + version }

// imageFile is one file of an image's single layer.
type imageFile struct {
	path string // inside the image, absolute
	src  string // on the host
	mode int64
}

// imageSpec is an image built from host files.
type imageSpec struct {
	ref        string
	files      []imageFile
	dirs       []string // created empty, such as a data folder
	entrypoint []string
	cmd        []string
	user       string
	workdir    string
}

// archive returns the path of spec's docker-archive tar, writing it unless the archive for
// the same inputs exists (the stamp holds a digest of reference, config and file contents).
func (c *Cluster) archive(spec imageSpec) (string, error) {
	key, err := spec.inputDigest()
	if err != nil {
		return "", err
	}
	base := strings.NewReplacer("/", "_", ":", "_").Replace(spec.ref)
	path := filepath.Join(c.layout.images(), base+".tar")
	stamp := path + ".stamp"
	if old, err := os.ReadFile(stamp); err == nil && string(old) == key {
		return path, nil
	}
	if err := os.MkdirAll(c.layout.images(), 0o755); err != nil {
		return "", err
	}
	layerTar, err := spec.layerTar()
	if err != nil {
		return "", err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return "", fmt.Errorf("image %s: layer: %w", spec.ref, err)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: spec.entrypoint,
			Cmd:        spec.cmd,
			User:       spec.user,
			WorkingDir: spec.workdir,
			Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		},
	})
	if err != nil {
		return "", err
	}
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return "", err
	}
	tag, err := name.NewTag(spec.ref)
	if err != nil {
		return "", fmt.Errorf("image reference %s: %w", spec.ref, err)
	}
	if err := tarball.WriteToFile(path+".tmp", tag, img); err != nil {
		return "", fmt.Errorf("writing image %s: %w", spec.ref, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return "", err
	}
	return path, os.WriteFile(stamp, []byte(key), 0o644)
}

// layerTar lays out spec's files and folders as one tar with fixed times, so equal inputs give
// an equal layer digest.
func (spec imageSpec) layerTar() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	addDir := func(dir string) error {
		var chain []string
		for d := dir; d != "/" && d != "." && !dirs[d]; d = filepath.Dir(d) {
			chain = append(chain, d)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			dirs[chain[i]] = true
			hdr := &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(chain[i], "/") + "/", Mode: 0o755, ModTime: time.Unix(0, 0)}
			if strings.HasSuffix(chain[i], "/tmp") {
				hdr.Mode = 0o1777
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range spec.dirs {
		if err := addDir(d); err != nil {
			return nil, err
		}
	}
	for _, f := range spec.files {
		if err := addDir(filepath.Dir(f.path)); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", spec.ref, err)
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.path, "/"), Mode: f.mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// inputDigest hashes everything that determines the archive.
func (spec imageSpec) inputDigest() (string, error) {
	h := sha256.New()
	// Writes to a hash never fail.
	_, _ = fmt.Fprintf(h, "%s\n%q %q %q %q %q\n", spec.ref, spec.entrypoint, spec.cmd, spec.user, spec.workdir, spec.dirs)
	for _, f := range spec.files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", spec.ref, err)
		}
		sum := sha256.Sum256(data)
		_, _ = fmt.Fprintf(h, "%s %o %x\n", f.path, f.mode, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// goBuildStatic compiles the main package pkg of this repository into out.
func (c *Cluster) goBuildStatic(ctx context.Context, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = c.repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, output)
	}
	return nil
}

// buildImages writes the archives of the pause image, one etcd image per pinned version,
// cert-manager's controllers and, when the work tree has it, the operator image.
func (c *Cluster) buildImages(ctx context.Context, etcdDirs map[string]string) ([]string, error) {
	binDir := filepath.Join(c.layout.images(), "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, err
	}
	pause := filepath.Join(binDir, "pause")
	if err := c.goBuildStatic(ctx, "./hack/images/pause", pause); err != nil {
		return nil, err
	}
	specs := []imageSpec{{
		ref:        PauseImage,
		files:      []imageFile{{path: "/pause", src: pause, mode: 0o755}},
		entrypoint: []string{"/pause"},
		user:       "65535:65535",
	}}
	specs = append(specs, c.certManagerImage())
	versions := make([]string, 0, len(etcdDirs))
	for v := range etcdDirs {
		versions = append(versions, v)
	}
	sort.Strings(versions)
	for _, v := range versions {
		var files []imageFile
		for _, bin := range []string{"etcd", "etcdctl", "etcdutl"} {
			files = append(files, imageFile{path: "/usr/local/bin/" + bin, src: filepath.Join(etcdDirs[v], bin), mode: 0o755})
		}
		// Laid out like the upstream image: binaries in /usr/local/bin, no entrypoint.
		specs = append(specs, imageSpec{
			ref:     EtcdImage(v),
			files:   files,
			dirs:    []string{"/var/etcd", "/var/lib/etcd", "/tmp"},
			cmd:     []string{"/usr/local/bin/etcd"},
			workdir: "/",
		})
	}
	if c.hasOperatorCommand() {
		spec, err := c.operatorImage(ctx, binDir)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	} else {
		c.logf("skipping the operator image: ./cmd/etcd-operator has no main package yet")
	}
	var (
		mu    sync.Mutex
		paths []string
		wg    sync.WaitGroup
		errs  = make([]error, len(specs))
	)
	for i, spec := range specs {
		wg.Go(func() {
			p, err := c.archive(spec)
			errs[i] = err
			mu.Lock()
			paths = append(paths, p)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(paths)
	return paths, nil
}

// operatorImage builds the operator's binaries into binDir and returns the operator image's
// spec: the operator, the data-dir guard that member Pods copy from it
// (internal/desired/guard.go, GuardBinaryInImage) and the snapshot agent that snapshot Jobs run
// (internal/desired/snapshotjob.go, SnapshotAgentBinaryInImage).
func (c *Cluster) operatorImage(ctx context.Context, binDir string) (imageSpec, error) {
	binaries := []struct{ pkg, path string }{
		{"./cmd/etcd-operator", "/etcd-operator"},
		{"./cmd/etcd-guard", "/etcd-guard"},
		{"./cmd/etcd-snapshot-agent", "/etcd-snapshot-agent"},
	}
	spec := imageSpec{ref: OperatorImage, dirs: []string{"/tmp"}, entrypoint: []string{"/etcd-operator"}, user: "65532:65532"}
	for _, b := range binaries {
		bin := filepath.Join(binDir, filepath.Base(b.path))
		if err := c.goBuildStatic(ctx, b.pkg, bin); err != nil {
			return imageSpec{}, fmt.Errorf("building the operator image: %w", err)
		}
		spec.files = append(spec.files, imageFile{path: b.path, src: bin, mode: 0o755})
	}
	return spec, nil
}

// hasOperatorCommand reports whether ./cmd/etcd-operator holds a main package yet.
func (c *Cluster) hasOperatorCommand() bool {
	matches, _ := filepath.Glob(filepath.Join(c.repoRoot, "cmd", "etcd-operator", "*.go"))
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err == nil && bytes.Contains(data, []byte("package main")) {
			return true
		}
	}
	return false
}

// importImages loads every archive into node's containerd, skipping archives the node already
// imported (recorded with their content digest in its containerd root, which survives down).
func (c *Cluster) importImages(ctx context.Context, n Node, archives []string) error {
	stampPath := c.layout.importStamp(n)
	done := map[string]bool{}
	if data, err := os.ReadFile(stampPath); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			done[line] = true
		}
	}
	var imported []string
	for _, a := range archives {
		key, err := os.ReadFile(a + ".stamp")
		if err != nil {
			return err
		}
		line := filepath.Base(a) + " " + string(key)
		if !done[line] {
			if _, err := runTool(ctx, "ctr", "--address", c.layout.containerdSocket(n), "--namespace", "k8s.io",
				"images", "import", a); err != nil {
				return fmt.Errorf("importing %s into %s: %w", filepath.Base(a), n.Name, err)
			}
		}
		imported = append(imported, line)
	}
	return os.WriteFile(stampPath, []byte(strings.Join(imported, "\n")), 0o644)
}
