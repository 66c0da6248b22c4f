package restoreagent

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

	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// Command is the etcd-operator subcommand that runs the agent: `etcd-operator restore-agent`.
const Command = restore.Command

// CommandInstall is the argument of the agent's other form, `etcd-operator restore-agent
// install DEST`, which copies the binary for the etcd image to run (restore.CommandInstall).
const CommandInstall = restore.CommandInstall

// memoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT sets one: the agent
// streams, holding a few buffers; etcdutl runs as a process of its own.
const memoryLimit = 32 << 20

// Main runs the agent as a process: it stops on SIGTERM or SIGINT and returns the exit code
// (snapshot.ExitOK, snapshot.ExitTransient or snapshot.ExitPermanent).
func Main(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	if len(args) > 0 && args[0] == CommandInstall {
		return install(args[1:], stderr)
	}
	if _, set := lookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return Run(ctx, args, lookupEnv, stderr)
}

func install(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		_, _ = fmt.Fprintf(stderr, "usage: etcd-operator %s %s DEST\n", Command, CommandInstall)
		return snapshot.ExitPermanent
	}
	if err := Install(args[0]); err != nil {
		_, _ = fmt.Fprintf(stderr, "etcd-operator %s: %v\n", Command, err)
		return snapshot.ExitTransient
	}
	return snapshot.ExitOK
}

// Run restores as configured by the environment (restore.ParseConfig), logs as JSON to stderr,
// writes the result to the termination message file and returns the exit code. The agent takes
// no arguments. Cancelling ctx stops it with snapshot.ReasonInterrupted.
func Run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	log := logr.FromSlogHandler(slog.NewJSONHandler(stderr, nil)).WithName(Command)
	cfg, err := restore.ParseConfig(lookupEnv)
	if err == nil && len(args) > 0 {
		err = snapshot.Failf(snapshot.ReasonInvalidConfig, "%s takes no arguments (it is configured by environment variables), got %q", Command, args)
	}
	var res restore.Result
	if err == nil {
		log = log.WithValues("uri", cfg.URI(), "dataDir", cfg.DataDir)
		res, err = restoreWithin(ctx, cfg, log)
	}
	path := cfg.TerminationMessagePath
	if err != nil {
		// What the run found before it failed (the artifact, its version, its digest) stays in
		// the result: it is what a person compares with what they expected.
		failure := restore.FailureResult(err)
		res.Outcome, res.Reason, res.Message = "", failure.Reason, failure.Message
		log.Error(err, "restore failed", "reason", res.Reason)
		if path == "" { // the environment did not parse: still report where the Pod expects it
			path = terminationPath(lookupEnv)
		}
	}
	if werr := os.WriteFile(path, restore.EncodeTerminationMessage(res), 0o600); werr != nil {
		log.Error(werr, "writing the termination message", "path", path)
	}
	if err != nil {
		return restore.ExitCode(res.Reason)
	}
	return snapshot.ExitOK
}

// restoreWithin restores within cfg.Timeout. When the run ends because time ran out or because
// the agent was asked to stop, that is the reason reported, not the error of whichever step the
// cancellation happened to interrupt.
func restoreWithin(ctx context.Context, cfg restore.Config, log logr.Logger) (restore.Result, error) {
	runCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res, err := Restore(runCtx, cfg, log)
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return res, snapshot.Failf(snapshot.ReasonInterrupted, "stopped before the restore finished: %w", err)
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return res, snapshot.Failf(snapshot.ReasonDeadlineExceeded, "the restore did not finish within %s: %w", cfg.Timeout, err)
	}
	return res, err
}

func terminationPath(lookupEnv func(string) (string, bool)) string {
	if p, _ := lookupEnv(snapshot.EnvTerminationMessagePath); p != "" {
		return p
	}
	return snapshot.DefaultTerminationMessagePath
}
