package snapshotagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// Command is the etcd-operator subcommand that runs the agent: `etcd-operator snapshot-agent`.
const Command = "snapshot-agent"

// Main runs the agent as a process: it stops on SIGTERM or SIGINT (the kubelet's signal at the
// Job's deadline or a Pod deletion) and returns the exit code (snapshot.ExitOK,
// snapshot.ExitTransient or snapshot.ExitPermanent).
func Main(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	if _, set := lookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
	}
	experimental.SetDefaultBufferPool(messageBufferPool())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return Run(ctx, args, lookupEnv, stderr)
}

// memoryLimit is the Go runtime's soft memory limit for the agent unless GOMEMLIMIT sets one.
// The agent keeps about 15 MiB live (two upload parts, gRPC's stream window, the runtime); the
// garbage collector's default pacing would let the heap reach twice that before collecting.
const memoryLimit = 32 << 20

// messageBufferPool is gRPC's default buffer pool with a 64 KiB tier added, for the process:
// the proto codec takes its buffers from the default pool whatever the connection's options.
// etcd sends a snapshot in messages of 32 KiB of data plus a few bytes of framing
// (snapshotSendBufferSize in etcd's server/etcdserver/api/v3rpc/maintenance.go), just too large
// for the default pool's 32 KiB tier: each message then takes a buffer of its 1 MiB tier, which
// the pool clears before every use, 32 bytes cleared for every byte received. On a 1 GiB
// snapshot that clearing was a quarter of the agent's CPU time (docs/backup-restore.md,
// "Performance"). The tiers are mem.DefaultBufferPool's (256 B, 4 KiB, 16 KiB, 32 KiB, 1 MiB)
// and 64 KiB.
func messageBufferPool() mem.BufferPool {
	pool, err := mem.NewBinaryTieredBufferPool(8, 12, 14, 15, 16, 20)
	if err != nil { // only exponents beyond the word size fail
		return mem.DefaultBufferPool()
	}
	return pool
}

// Run takes one snapshot as configured by the environment (snapshot.ParseConfig), logs as JSON
// to stderr, writes the result to the termination message file and returns the exit code. The
// agent takes no arguments. Cancelling ctx stops it with snapshot.ReasonInterrupted.
func Run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	log := logr.FromSlogHandler(slog.NewJSONHandler(stderr, nil)).WithName(Command)
	cfg, err := snapshot.ParseConfig(lookupEnv)
	if err == nil && len(args) > 0 {
		err = snapshot.Failf(snapshot.ReasonInvalidConfig, "%s takes no arguments (it is configured by environment variables), got %q", Command, args)
	}
	var res snapshot.Result
	if err == nil {
		log = log.WithValues("snapshot", cfg.SnapshotName, "snapshotUID", cfg.SnapshotUID)
		res, err = takeWithin(ctx, cfg, log)
	}
	path := cfg.TerminationMessagePath
	if err != nil {
		res = snapshot.FailureResult(err)
		log.Error(err, "snapshot failed", "reason", res.Reason)
		if path == "" { // the environment did not parse: still report where the Pod expects it
			path = terminationPath(lookupEnv)
		}
	}
	res.PeakRSSBytes = peakRSS()
	if werr := writeTerminationMessage(path, res); werr != nil {
		log.Error(werr, "writing the termination message", "path", path)
	}
	if err != nil {
		return res.Reason.ExitCode()
	}
	return snapshot.ExitOK
}

// takeWithin takes the snapshot within cfg.Timeout. When the run ends because time ran out or
// because the agent was asked to stop, that is the reason reported, not the error of whichever
// call the cancellation happened to interrupt.
func takeWithin(ctx context.Context, cfg snapshot.Config, log logr.Logger) (snapshot.Result, error) {
	runCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res, err := Take(runCtx, cfg, log)
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return res, snapshot.Failf(snapshot.ReasonInterrupted, "stopped before the snapshot was stored: %w", err)
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return res, snapshot.Failf(snapshot.ReasonDeadlineExceeded, "the snapshot did not finish within %s: %w", cfg.Timeout, err)
	}
	return res, err
}

func terminationPath(lookupEnv func(string) (string, bool)) string {
	if p, _ := lookupEnv(snapshot.EnvTerminationMessagePath); p != "" {
		return p
	}
	return snapshot.DefaultTerminationMessagePath
}

// writeTerminationMessage writes the result where the kubelet reads the container's
// termination message, which the controller reads from the Pod's status: no log reading, no
// pods/log permission.
func writeTerminationMessage(path string, res snapshot.Result) error {
	if err := os.WriteFile(path, snapshot.EncodeTerminationMessage(res), 0o600); err != nil {
		return fmt.Errorf("writing the termination message: %w", err)
	}
	return nil
}
