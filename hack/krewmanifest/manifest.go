package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// DefaultHomepage is the project's repository.
const DefaultHomepage = "https://github.com/etcd-operator/etcd-operator"

// binary is the plugin's executable in every archive; kubectl finds it as `kubectl etcd`.
const binary = "kubectl-etcd"

// Options say what the manifest names besides the archives.
type Options struct {
	// Version is the version the binaries carry (-X main.version).
	Version string
	// URIBase is the URL the archives are downloaded from.
	URIBase string
	// Homepage is the plugin's homepage.
	Homepage string
}

// Manifest is a krew Plugin (apiVersion krew.googlecontainertools.github.com/v1alpha2).
type Manifest struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata names the plugin: the manifest's file name and the kubectl subcommand.
type Metadata struct {
	Name string `json:"name"`
}

// Spec is the plugin's version, description and platforms.
type Spec struct {
	Version          string     `json:"version"`
	Homepage         string     `json:"homepage"`
	ShortDescription string     `json:"shortDescription"`
	Description      string     `json:"description"`
	Platforms        []Platform `json:"platforms"`
}

// Platform is one archive and the os/arch it runs on.
type Platform struct {
	Selector Selector `json:"selector"`
	URI      string   `json:"uri"`
	Sha256   string   `json:"sha256"`
	Bin      string   `json:"bin"`
	Files    []File   `json:"files"`
}

// Selector matches krew's os and arch labels.
type Selector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// File is copied from the archive into the plugin's directory.
type File struct {
	From string `json:"from"`
	To   string `json:"to"`
}

const description = `kubectl etcd works on an EtcdCluster of etcd-operator by name: one screen of
status, members, alarms and snapshots, and day-2 operations (snapshot, defrag, compact,
move-leader, remove-member, replace-member, pause, resume, recover). Every membership
change goes through the operator. Mutating commands print a plan, run the operator's
own safety checks, and change nothing without --apply.
`

// archiveName is kubectl-etcd_<version>_<os>_<arch>.tar.gz or .zip.
var archiveName = regexp.MustCompile(`^` + binary + `_.+_([a-z0-9]+)_([a-z0-9]+)\.(tar\.gz|zip)$`)

// Generate renders the manifest for the archives at paths.
func Generate(o Options, paths []string) ([]byte, error) {
	m := Manifest{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   Metadata{Name: "etcd"},
		Spec: Spec{
			Version:          KrewVersion(o.Version),
			Homepage:         cmp.Or(o.Homepage, DefaultHomepage),
			ShortDescription: "Operate etcd clusters of etcd-operator, safely",
			Description:      description,
		},
	}
	for _, p := range paths {
		pl, err := platform(o, p)
		if err != nil {
			return nil, err
		}
		m.Spec.Platforms = append(m.Spec.Platforms, pl)
	}
	slices.SortFunc(m.Spec.Platforms, func(a, b Platform) int {
		return cmp.Or(cmp.Compare(a.Selector.MatchLabels["os"], b.Selector.MatchLabels["os"]),
			cmp.Compare(a.Selector.MatchLabels["arch"], b.Selector.MatchLabels["arch"]))
	})
	return yaml.Marshal(m)
}

func platform(o Options, path string) (Platform, error) {
	name := filepath.Base(path)
	parts := archiveName.FindStringSubmatch(name)
	if parts == nil {
		return Platform{}, fmt.Errorf("%s is not named %s_<version>_<os>_<arch>.tar.gz or .zip", name, binary)
	}
	sum, err := sha256File(path)
	if err != nil {
		return Platform{}, err
	}
	bin := binary
	if parts[1] == "windows" {
		bin += ".exe"
	}
	return Platform{
		Selector: Selector{MatchLabels: map[string]string{"os": parts[1], "arch": parts[2]}},
		URI:      strings.TrimSuffix(o.URIBase, "/") + "/" + name,
		Sha256:   sum,
		Bin:      bin,
		Files:    []File{{From: bin, To: "."}},
	}, nil
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	// Read only: a failed close loses nothing.
	_ = f.Close()
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// semver is a semantic version, with or without the leading v.
var semver = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// KrewVersion is version as krew wants it, a semantic version with a leading v. A tag (v0.3.0,
// or v0.3.0-5-gabc1234-dirty past it) is kept; anything else, such as the bare commit git
// describe gives without a tag, becomes a pre-release of v0.0.0 that names it.
func KrewVersion(version string) string {
	if semver.MatchString(version) {
		return "v" + strings.TrimPrefix(version, "v")
	}
	clean := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, version)
	// One identifier that starts with letters: never a numeric one with a leading zero.
	return "v0.0.0-dev-" + clean
}
