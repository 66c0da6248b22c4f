package agentio

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dropBehindWindow is how much written data DropBehind lets accumulate before it starts
// writing it back.
const dropBehindWindow = 8 << 20

// DropBehind writes a large file without letting it fill the page cache. Linux charges the page
// cache of written files to the writer's cgroup, so a 1 GiB snapshot written plainly would
// count as 1 GiB of the Job's memory until the kernel reclaims it; it would also leave the
// whole file dirty for one long fsync at the end. Every dropBehindWindow bytes, DropBehind
// starts writeback of the window just written and tells the kernel to drop the window before
// it, whose writeback it started one window earlier
// (https://man7.org/linux/man-pages/man2/sync_file_range.2.html, posix_fadvise
// POSIX_FADV_DONTNEED). It never waits for the disk itself: pages still being written back are
// simply not dropped, and the kernel's own dirty-page throttling bounds them.
type DropBehind struct {
	f       *os.File
	fd      int
	written int64
	// dropFrom and started delimit the window whose writeback was started last; it is dropped
	// when the next one starts.
	dropFrom, started int64
	// disabled is set when the file system does not support sync_file_range.
	disabled bool
}

// NewDropBehind wraps f, a file being written from its start.
func NewDropBehind(f *os.File) *DropBehind {
	return &DropBehind{f: f, fd: int(f.Fd())}
}

// Write implements io.Writer. Errors of starting writeback come back like errors of the write
// itself.
func (d *DropBehind) Write(p []byte) (int, error) {
	n, err := d.f.Write(p)
	d.written += int64(n)
	if err != nil || d.disabled || d.written-d.started < dropBehindWindow {
		return n, err
	}
	if err := d.cycle(); err != nil {
		return n, &os.PathError{Op: "sync_file_range", Path: d.f.Name(), Err: err}
	}
	return n, nil
}

// cycle starts writeback of [started, written) and drops [dropFrom, started) from the page
// cache.
func (d *DropBehind) cycle() error {
	if err := unix.SyncFileRange(d.fd, d.started, d.written-d.started, unix.SYNC_FILE_RANGE_WRITE); err != nil {
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ESPIPE) {
			d.disabled = true // the final fsync still makes the file durable
			return nil
		}
		return err
	}
	if d.started > d.dropFrom {
		_ = unix.Fadvise(d.fd, d.dropFrom, d.started-d.dropFrom, unix.FADV_DONTNEED) // advice only
	}
	d.dropFrom, d.started = d.started, d.written
	return nil
}

// Release drops the whole file from the page cache; call it once the file is synced, when
// none of its pages is dirty.
func (d *DropBehind) Release() {
	_ = unix.Fadvise(d.fd, 0, 0, unix.FADV_DONTNEED) // advice only
}
