package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lock serialises the commands that change the cluster (up, down, node stop/start), which
// tests and the CLI may run at the same time; a second up then finds everything running. The
// returned function releases the lock.
func (c *Cluster) lock() (func(), error) {
	if err := os.MkdirAll(c.layout.root, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(c.layout.root, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		c.logf("waiting for another localcluster command (lock %s)", path)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}
