package restoreagent

import (
	"context"
	"fmt"
	"io"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
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

// task names the agent's work when it is stopped or runs out of time.
var task = agentio.Task{Name: "the restore", Done: "the restore finished"}

// Main runs the agent as a process: it stops on SIGTERM or SIGINT and returns the exit code
// (snapshot.ExitOK, snapshot.ExitTransient or snapshot.ExitPermanent).
func Main(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	if len(args) > 0 && args[0] == CommandInstall {
		return install(args[1:], stderr)
	}
	ctx, stop := agentio.StartProcess(lookupEnv, memoryLimit)
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
	log := agentio.NewLogger(stderr, Command)
	cfg, err := restore.ParseConfig(lookupEnv)
	if err == nil {
		err = agentio.NoArguments(Command, args)
	}
	var res restore.Result
	if err == nil {
		log = log.WithValues("uri", cfg.URI(), "dataDir", cfg.DataDir)
		res, err = agentio.Within(ctx, cfg.Timeout, task, func(ctx context.Context) (restore.Result, error) {
			return Restore(ctx, cfg, log)
		})
	}
	if err != nil {
		// What the run found before it failed (the artifact, its version, its digest) stays in
		// the result: it is what a person compares with what they expected.
		failure := restore.FailureResult(err)
		res.Outcome, res.Reason, res.Message = "", failure.Reason, failure.Message
		log.Error(err, "restore failed", "reason", res.Reason)
	}
	agentio.WriteTerminationMessage(log, cfg.TerminationMessagePath, lookupEnv, restore.EncodeTerminationMessage(res))
	if err != nil {
		return restore.ExitCode(res.Reason)
	}
	return snapshot.ExitOK
}
