package pinned

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CertManagerSource is the folder, relative to the repository root, of the command that runs
// cert-manager's controllers in the local cluster. Its go.mod is the one place where the
// cert-manager version is pinned (docs/local-cluster.md, "cert-manager").
const CertManagerSource = "hack/certmanager"

// CertManagerModule is cert-manager's root module: it holds every controller and the CRDs.
const CertManagerModule = "github.com/cert-manager/cert-manager"

// CertManagerBinary is the name of the cert-manager controller in the cache.
const CertManagerBinary = "cert-manager-controller"

// certManagerPackage is the main package in CertManagerSource.
const certManagerPackage = "github.com/etcd-operator/etcd-operator/hack/certmanager"

// CertManagerVersion reads the cert-manager release (such as 1.21.2, without the v) that
// CertManagerSource's go.mod under repoRoot requires.
func CertManagerVersion(repoRoot string) (string, error) {
	path := filepath.Join(repoRoot, CertManagerSource, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the pinned cert-manager version: %w", err)
	}
	v, err := RequiredVersion(data, CertManagerModule)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return strings.TrimPrefix(v, "v"), nil
}

// RequiredVersion returns the version at which goMod, the text of a go.mod, requires module,
// in a require block or a single require line.
func RequiredVersion(goMod []byte, module string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(goMod))
	inBlock := false
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case fields[0] == "require" && len(fields) == 2 && fields[1] == "(":
			inBlock = true
			continue
		case inBlock && fields[0] == ")":
			inBlock = false
			continue
		case fields[0] == "require":
			fields = fields[1:]
		case !inBlock:
			continue
		}
		if len(fields) == 2 && fields[0] == module {
			return fields[1], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s is not required", module)
}

// CertManager builds (or reuses) CertManagerBinary from CertManagerSource under repoRoot and
// returns its folder. Unlike the other binaries it is built in place, from a module of this
// repository: a digest of that module's files is part of the recipe.
func (b *Builder) CertManager(ctx context.Context, repoRoot string) (string, error) {
	version, err := CertManagerVersion(repoRoot)
	if err != nil {
		return "", err
	}
	return b.ensureInPlace(ctx, filepath.Join(repoRoot, CertManagerSource), "cert-manager-v"+version,
		CertManagerBinary, certManagerPackage, "")
}

// ensureInPlace builds (or reuses) binary, the main package pkg of the module of this repository
// in src, into the cache folder name, and returns that folder. A digest of the module's files is
// part of the recipe, so a change to the main or to its pin rebuilds.
func (b *Builder) ensureInPlace(ctx context.Context, src, name, binary, pkg, ldflags string) (string, error) {
	digest, err := sourceDigest(src)
	if err != nil {
		return "", err
	}
	set := binarySet{
		name:     name,
		packages: map[string]string{binary: pkg},
		ldflags:  ldflags,
		srcDir:   src, srcDigest: digest,
	}
	return b.ensure(ctx, set, []string{binary})
}

// CertManagerCRDs returns the folder of cert-manager's CRDs (deploy/crds, plain YAML) in the
// module cache, downloading the module pinned under repoRoot if needed.
func (b *Builder) CertManagerCRDs(ctx context.Context, repoRoot string) (string, error) {
	version, err := CertManagerVersion(repoRoot)
	if err != nil {
		return "", err
	}
	info, err := b.download(ctx, CertManagerModule, "v"+version)
	if err != nil {
		return "", err
	}
	return filepath.Join(info.Dir, "deploy", "crds"), nil
}

// moduleInfo is the part of `go mod download -json` this package reads.
type moduleInfo struct {
	Dir   string
	GoMod string
}

// download fetches module@version into the module cache and reports where it is.
func (b *Builder) download(ctx context.Context, module, version string) (moduleInfo, error) {
	var out bytes.Buffer
	cmd := b.goCommand(ctx, b.cacheDirOrRoot(), "mod", "download", "-json", module+"@"+version)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return moduleInfo{}, fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var info moduleInfo
	if err := json.Unmarshal(out.Bytes(), &info); err != nil || info.GoMod == "" || info.Dir == "" {
		return moduleInfo{}, fmt.Errorf("go mod download %s@%s: no Dir or GoMod in %q", module, version, out.String())
	}
	return info, nil
}

// sourceDigest hashes the names and contents of the go.mod, go.sum and Go files directly in dir.
func sourceDigest(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (n == "go.mod" || n == "go.sum" || strings.HasSuffix(n, ".go")) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		_, _ = fmt.Fprintf(h, "%s %x\n", n, sum) // writes to a hash never fail
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
