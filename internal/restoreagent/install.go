package restoreagent

import (
	"fmt"
	"io"
	"os"
)

// Install copies the running executable to dest, in an existing folder (the emptyDir shared with
// the restore container), so that the etcd image, which holds no operator, can run the agent.
// The copy is streamed, not read whole (the operator binary is tens of megabytes and the
// container's memory limit small), written beside dest and renamed, so a crash never leaves a
// truncated executable.
func Install(dest string) (err error) {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating the operator executable: %w", err)
	}
	in, err := os.Open(self) //nolint:gosec // G304: the running executable
	if err != nil {
		return fmt.Errorf("reading %s: %w", self, err)
	}
	defer func() { _ = in.Close() }()
	tmp := dest + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755) //nolint:gosec // G302,G304: an executable the restore container runs, at the Pod's own path
	if err != nil {
		return fmt.Errorf("installing the restore agent: %w", err)
	}
	defer func() {
		if err != nil {
			_ = out.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("installing the restore agent: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("installing the restore agent: %w", err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("installing the restore agent: %w", err)
	}
	return nil
}
