package etcdproc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvBinDirs names the folders of real etcd releases, one per supported minor, each holding
// etcd, etcdctl and etcdutl and named etcd-v<version>, separated by colons: the output of
// `go run ./hack/binaries etcd`, which `make test` sets. Tests that need every minor, or
// etcdutl, use it; FindBinary serves tests that need any one etcd.
const EnvBinDirs = "ETCD_BIN_DIRS"

// ErrNoBinDirs means EnvBinDirs is unset. The packages that need it fail rather than skip, so
// that a green run can never mean that nothing ran.
var ErrNoBinDirs = errors.New(EnvBinDirs + " is not set: run these tests with `make test`, or set it to the folders " +
	"printed by `go run ./hack/binaries etcd`, colon-separated")

// CheckBinDirs is ErrNoBinDirs when EnvBinDirs is unset; call it from TestMain.
func CheckBinDirs() error {
	if os.Getenv(EnvBinDirs) == "" {
		return ErrNoBinDirs
	}
	return nil
}

// BinDirs lists the folders EnvBinDirs names.
func BinDirs() []string {
	var dirs []string
	for d := range strings.SplitSeq(os.Getenv(EnvBinDirs), ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// FindRelease returns the folder of the etcd release of minor (such as "3.6") among BinDirs,
// and its full version; ok is false when there is none.
func FindRelease(minor string) (dir, version string, ok bool) {
	for _, d := range BinDirs() {
		if _, v, found := strings.Cut(filepath.Base(d), "-v"); found && strings.HasPrefix(v, minor+".") {
			return d, v, true
		}
	}
	return "", "", false
}

// RequireRelease is FindRelease, failing the test when there is no release of minor.
func RequireRelease(tb testing.TB, minor string) (dir, version string) {
	tb.Helper()
	dir, version, ok := FindRelease(minor)
	if !ok {
		tb.Fatalf("no etcd %s in %s=%q: run through `make test`", minor, EnvBinDirs, os.Getenv(EnvBinDirs))
	}
	return dir, version
}
