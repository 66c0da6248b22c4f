package pinned

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultCacheDir is where binaries are cached when $ETCD_OPERATOR_CACHE is unset:
// ${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator, the same rule as the Makefile.
func DefaultCacheDir() (string, error) {
	if dir := os.Getenv("ETCD_OPERATOR_CACHE"); dir != "" {
		return filepath.Abs(dir)
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating the cache: set ETCD_OPERATOR_CACHE or HOME: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "etcd-operator"), nil
}

// lockCache takes an exclusive lock on one binary set of the cache (its folders bin/<set> and
// src/<set>) so that concurrent callers build each binary once; it blocks, saying so on log,
// while another process or goroutine holds it. Sets have locks of their own so that different
// sets build at the same time: a cold build spends much of its time downloading modules, which
// another set's compilation can fill (docs/local-cluster.md, "Pinned binaries"). Go's module and
// build caches are safe for concurrent use. The returned function releases the lock.
func lockCache(cacheDir, set string, log io.Writer) (func(), error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating cache %s: %w", cacheDir, err)
	}
	path := filepath.Join(cacheDir, ".build-"+set+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		_, _ = fmt.Fprintf(log, "hack/binaries: waiting for another build that holds %s\n", path)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// Closing the file releases the flock.
	return func() { _ = f.Close() }, nil
}

// stampPath is the file that proves binary was built completely by the recipe it contains.
func stampPath(binDir, binary string) string {
	return filepath.Join(binDir, "."+binary+".stamp")
}

// isCached reports whether binary exists in binDir and its stamp matches recipe.
func isCached(binDir, binary, recipe string) bool {
	stamp, err := os.ReadFile(stampPath(binDir, binary))
	if err != nil || string(stamp) != recipe {
		return false
	}
	_, err = os.Stat(filepath.Join(binDir, binary))
	return err == nil
}

// writeFileAtomic replaces path with data so readers never see a partial file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %s: %w", tmp, err)
	}
	return nil
}
