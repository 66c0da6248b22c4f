package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one long-running cluster component. It runs detached (own session, output to a
// log file), so it outlives the CLI that started it; its pid file lets later commands find it.
type process struct {
	name string
	bin  string
	args []string
	env  []string
}

// start launches p unless a live process from its pid file already runs the same binary,
// which is what makes up idempotent. It reports whether it started a new process.
func (l layout) start(p process) (bool, error) {
	if pid, ok := l.running(p.name); ok {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == p.bin {
			return false, nil
		}
	}
	for _, dir := range []string{l.run(), l.logs()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
	}
	logFile, err := os.OpenFile(l.logFile(p.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return false, err
	}
	// The child holds its own copy of the descriptor.
	defer func() { _ = logFile.Close() }()
	if _, err := fmt.Fprintf(logFile, "\n=== %s starting: %s %s\n", time.Now().UTC().Format(time.RFC3339), p.bin, strings.Join(p.args, " ")); err != nil {
		return false, err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), p.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("starting %s: %w", p.name, err)
	}
	if err := os.WriteFile(l.pidFile(p.name), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return false, err
	}
	// Release, not Wait: the process is meant to outlive us; init reaps it.
	return true, cmd.Process.Release()
}

// running returns the pid of the live process recorded for name.
func (l layout) running(name string) (int, bool) {
	data, err := os.ReadFile(l.pidFile(name))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, alive(pid)
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state letter follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] != 'Z'
}

// stop sends SIGTERM to the process recorded for name, waits up to grace for it to exit, then
// kills it. A missing or dead process is not an error: stop is called on every down.
func (l layout) stop(ctx context.Context, name string, grace time.Duration) error {
	pid, ok := l.running(name)
	if ok {
		if err := terminate(ctx, pid, grace); err != nil {
			return fmt.Errorf("stopping %s: %w", name, err)
		}
	}
	if err := os.Remove(l.pidFile(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// terminate sends SIGTERM to pid and SIGKILL after grace.
func terminate(ctx context.Context, pid int, grace time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	deadline := time.Now().Add(grace)
	for alive(pid) {
		if time.Now().After(deadline) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
			deadline = time.Now().Add(5 * time.Second)
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// runTool runs a short-lived command and returns its combined output, naming the command in
// the error so the message says what to look at.
func runTool(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
