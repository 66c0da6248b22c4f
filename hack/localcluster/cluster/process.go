package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	// configs are files the process reads its configuration from at start (CoreDNS's
	// Corefile, the API server's audit policy). Their content is part of the recipe, so a
	// changed file restarts the process like a changed flag does.
	configs []string
}

// recipe is a digest of everything that decides how p runs: binary, arguments, environment
// and the content of its configuration files. Up records it next to the pid file and
// restarts a running process whose recipe changed.
func (p process) recipe() (string, error) {
	// Writes to a hash never fail. Every string is length-prefixed, so moving a boundary
	// (one flag split in two, a flag moved into the environment) changes the digest.
	h := sha256.New()
	for _, part := range [][]string{{p.bin}, p.args, p.env} {
		for _, s := range part {
			_, _ = fmt.Fprintf(h, "%d:%s\n", len(s), s)
		}
		h.Write([]byte{0})
	}
	for _, path := range p.configs {
		content, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("reading the configuration of %s: %w", p.name, err)
		}
		_, _ = fmt.Fprintf(h, "%s %d:", path, len(content))
		h.Write(content)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// staleReason says why the live process pid, started for p's component, does not run p's
// recipe want, or returns "" when it does. A process started before recipes were recorded is
// adopted when its command line is p's and p reads no configuration file; otherwise there is
// no telling what it runs with, and it is restarted once.
func (l layout) staleReason(pid int, p process, want string) string {
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != p.bin {
		return "its binary changed"
	}
	recorded, err := os.ReadFile(l.recipeFile(p.name))
	switch {
	case err == nil && strings.TrimSpace(string(recorded)) == want:
		return ""
	case err == nil:
		return "its flags, environment or configuration files changed"
	case len(p.configs) > 0:
		return "it was started without a recorded configuration"
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || string(cmdline) != strings.Join(append([]string{p.bin}, p.args...), "\x00")+"\x00" {
		return "its flags changed"
	}
	return ""
}

// restartGrace bounds how long a component whose recipe changed may take to stop.
const restartGrace = 20 * time.Second

// start starts p, or restarts it when the running process does not run p's recipe (see
// staleReason), and records the recipe. It reports whether it started a process.
func (c *Cluster) start(ctx context.Context, p process) (bool, error) {
	want, err := p.recipe()
	if err != nil {
		return false, err
	}
	if pid, ok := c.layout.running(p.name); ok {
		why := c.layout.staleReason(pid, p, want)
		if why == "" {
			// Adopted: record the recipe, so later changes of its files are noticed.
			return false, os.WriteFile(c.layout.recipeFile(p.name), []byte(want+"\n"), 0o644)
		}
		c.logf("restarting %s: %s", p.name, why)
		if err := c.layout.stop(ctx, p.name, restartGrace); err != nil {
			return false, err
		}
	}
	started, err := c.layout.start(p)
	if err != nil || !started {
		return started, err
	}
	return true, os.WriteFile(c.layout.recipeFile(p.name), []byte(want+"\n"), 0o644)
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
	for _, f := range []string{l.pidFile(name), l.recipeFile(name)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
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
