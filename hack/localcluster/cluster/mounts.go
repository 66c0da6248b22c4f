package cluster

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
)

// mountsUnder lists the mount points below root (overlay root filesystems, Pod volume tmpfs,
// sandbox shm), deepest first so they can be unmounted in order.
func mountsUnder(root string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		// Field 5 is the mount point, with spaces and the like octal-escaped.
		mp := unescapeMountPath(fields[4])
		if mp == root || strings.HasPrefix(mp, root+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts, nil
}

func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder detaches every mount below root. Lazy (MNT_DETACH), because a mount still busy
// after its processes were killed would otherwise keep down from finishing.
func unmountUnder(root string) error {
	mounts, err := mountsUnder(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mounts {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}
