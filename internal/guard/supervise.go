package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Config is one start of etcd under the guard.
type Config struct {
	// DataDir is etcd's --data-dir.
	DataDir string
	// Marker is the file, on a volume that lives as long as the Pod, recording that this Pod has
	// seen DataDir hold data.
	Marker string
	// DataExpected says the member ran with DataDir before the Pod was created.
	DataExpected bool
	// TerminationLog receives a refusal, so the kubelet reports it as the termination message.
	// Empty skips it.
	TerminationLog string
	// Command is etcd and its flags.
	Command []string
	// PollInterval is how often the guard looks for the WAL of a first start, to record the
	// marker once etcd has written it.
	PollInterval time.Duration
	// AwaitMembership holds a first start (an empty data dir) until a peer lists the member:
	// its Pod was created before the member was added to etcd (a staged join).
	AwaitMembership bool
	// MembershipInterval is how often the peers are asked while AwaitMembership holds etcd;
	// zero means membershipPollInterval.
	MembershipInterval time.Duration
	// Stderr receives the guard's own messages.
	Stderr io.Writer
	// RecoveryListen is the address of the log-tail endpoint; empty serves none.
	RecoveryListen string
	// ForceFile is the file the kubelet projects the Pod's force-new-cluster annotation into;
	// empty never forces. ForcedMarker records the request a start was forced for.
	ForceFile, ForcedMarker string
	// ForcePollInterval is how often ForceFile is read while etcd runs; zero means
	// forcePollInterval.
	ForcePollInterval time.Duration
}

// Supervise runs etcd if Check allows it and returns the exit code the container should end
// with: 1 for a refusal, etcd's own code otherwise (128+n when a signal n killed it).
//
// The guard stays etcd's parent rather than exec'ing it, because only a process that outlives
// etcd's first start can see the WAL appear and record the marker; without that, a member whose
// Pod was created before it had any data (every member of a new cluster) would be unprotected
// for the whole life of that Pod.
func Supervise(cfg Config) int {
	if len(cfg.Command) == 0 {
		_, _ = fmt.Fprintln(cfg.Stderr, "etcd-guard: no etcd command given after --")
		return 2
	}
	if err := Check(cfg.DataDir, cfg.Marker, cfg.DataExpected); err != nil {
		refuse(cfg, err)
		return 1
	}
	has, err := HasData(cfg.DataDir)
	if err == nil && has {
		err = MarkSeen(cfg.Marker, cfg.DataDir)
	}
	if err != nil {
		refuse(cfg, err)
		return 1
	}
	if !has && cfg.AwaitMembership {
		if code, ok := awaitMembership(cfg); !ok {
			return code
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if cfg.RecoveryListen != "" {
		go serveLogTail(ctx, cfg)
	}
	var reported string
	force := pendingForce(cfg, &reported)
	for {
		code, next := runEtcd(ctx, cfg, force, has)
		if next == "" {
			return code
		}
		force, has = next, true
	}
}

// runEtcd runs etcd once, with --force-new-cluster when force names a request, and returns
// its exit code; or, when a force request arrives while it runs, stops it and returns the
// request so that the caller starts it again with the flag.
func runEtcd(ctx context.Context, cfg Config, force string, has bool) (code int, restartFor string) {
	args := cfg.Command[1:]
	if force != "" {
		if err := recordForced(cfg, force); err != nil {
			refuse(cfg, err)
			return 1, ""
		}
		_, _ = fmt.Fprintf(cfg.Stderr, "etcd-guard: starting etcd once with --force-new-cluster (request %s)\n", force)
		args = forcedArgs(args)
	}
	cmd := exec.Command(cfg.Command[0], args...) //nolint:gosec // the command is the Pod's own etcd invocation
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, forwarded...)
	defer signal.Stop(signals)
	if err := cmd.Start(); err != nil {
		refuse(cfg, fmt.Errorf("starting %s: %w", cfg.Command[0], err))
		return 127, ""
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	forces := make(chan string, 1)
	if force == "" {
		go watchForce(runCtx, cfg, forces)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if !has {
		go watchForData(cfg, runCtx.Done())
	}
	var err error
	for waiting := true; waiting; {
		select {
		case s := <-signals:
			_ = cmd.Process.Signal(s)
		case restartFor = <-forces:
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case err = <-exited:
			waiting = false
		}
	}
	markIfWritten(cfg, has)
	if restartFor != "" {
		return 0, restartFor
	}
	return exitCode(err), ""
}

// markIfWritten records the marker when etcd wrote its WAL and stopped between two polls.
func markIfWritten(cfg Config, had bool) {
	if had {
		return
	}
	if has, err := HasData(cfg.DataDir); err == nil && has {
		if err := MarkSeen(cfg.Marker, cfg.DataDir); err != nil {
			_, _ = fmt.Fprintf(cfg.Stderr, "etcd-guard: %v\n", err)
		}
	}
}

// awaitMembership holds a staged member's first start until a peer lists it. A stop signal
// during the wait ends the container as etcd would have ended it (128+signal); a command line
// the wait cannot read is a refusal.
func awaitMembership(cfg Config) (code int, ok bool) {
	interval := cfg.MembershipInterval
	if interval <= 0 {
		interval = membershipPollInterval
	}
	w, err := membershipOf(cfg.Command[1:], interval, cfg.Stderr)
	if err != nil {
		refuse(cfg, fmt.Errorf("cannot wait to be added to the cluster: %w", err))
		return 1, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), forwarded...)
	defer stop()
	if err := w.Await(ctx); err != nil {
		_, _ = fmt.Fprintf(cfg.Stderr, "etcd-guard: %v\n", err)
		return 128 + int(syscall.SIGTERM), false
	}
	return 0, true
}

// watchForData records the marker as soon as etcd's first start has written its WAL.
func watchForData(cfg Config, done <-chan struct{}) {
	tick := time.NewTicker(cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			has, err := HasData(cfg.DataDir)
			if err != nil || !has {
				continue
			}
			if err := MarkSeen(cfg.Marker, cfg.DataDir); err != nil {
				_, _ = fmt.Fprintf(cfg.Stderr, "etcd-guard: %v\n", err)
			}
			return
		}
	}
}

// refuse reports why etcd was not started, on stderr and in the termination log.
func refuse(cfg Config, err error) {
	msg := err.Error()
	var lost *DataLostError
	if !errors.As(err, &lost) {
		msg = "etcd-guard: " + msg
	}
	_, _ = fmt.Fprintln(cfg.Stderr, msg)
	if cfg.TerminationLog != "" {
		_ = os.WriteFile(cfg.TerminationLog, []byte(msg+"\n"), 0o600)
	}
}

// exitCode turns etcd's end into the container's exit code, the way a shell would.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return 1
	}
	if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return 128 + int(status.Signal())
	}
	return exit.ExitCode()
}
