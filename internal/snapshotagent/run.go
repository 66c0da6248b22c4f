package snapshotagent

import (
	"context"
	"io"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// Command is the etcd-operator subcommand that runs the agent: `etcd-operator snapshot-agent`.
const Command = "snapshot-agent"

// Main runs the agent as a process: it stops on SIGTERM or SIGINT (the kubelet's signal at the
// Job's deadline or a Pod deletion) and returns the exit code (snapshot.ExitOK,
// snapshot.ExitTransient or snapshot.ExitPermanent).
func Main(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	ctx, stop := agentio.StartProcess(lookupEnv, memoryLimit)
	defer stop()
	return Run(ctx, args, lookupEnv, stderr)
}

// memoryLimit is the Go runtime's soft memory limit for the agent unless GOMEMLIMIT sets one.
// The agent keeps about 15 MiB live (two upload parts, gRPC's stream window, the runtime); the
// garbage collector's default pacing would let the heap reach twice that before collecting.
const memoryLimit = 32 << 20

// task names the agent's work when it is stopped or runs out of time.
var task = agentio.Task{Name: "the snapshot", Done: "the snapshot was stored"}

// Run takes one snapshot as configured by the environment (snapshot.ParseConfig), logs as JSON
// to stderr, writes the result to the termination message file and returns the exit code. The
// agent takes no arguments. Cancelling ctx stops it with snapshot.ReasonInterrupted.
func Run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	log := agentio.NewLogger(stderr, Command)
	cfg, err := snapshot.ParseConfig(lookupEnv)
	if err == nil {
		err = agentio.NoArguments(Command, args)
	}
	var res snapshot.Result
	if err == nil {
		log = log.WithValues("snapshot", cfg.SnapshotName, "snapshotUID", cfg.SnapshotUID)
		res, err = agentio.Within(ctx, cfg.Timeout, task, func(ctx context.Context) (snapshot.Result, error) {
			return Take(ctx, cfg, log)
		})
	}
	if err != nil {
		res = snapshot.FailureResult(err)
		log.Error(err, "snapshot failed", "reason", res.Reason)
	}
	agentio.WriteTerminationMessage(log, cfg.TerminationMessagePath, lookupEnv, snapshot.EncodeTerminationMessage(res))
	if err != nil {
		return res.Reason.ExitCode()
	}
	return snapshot.ExitOK
}
