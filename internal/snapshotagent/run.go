package snapshotagent

import (
	"context"
	"io"

	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// Command is the etcd-operator subcommand that runs the agent: `etcd-operator snapshot-agent`.
const Command = "snapshot-agent"

// Main runs the agent as a process: it stops on SIGTERM or SIGINT (the kubelet's signal at the
// Job's deadline or a Pod deletion) and returns the exit code (snapshot.ExitOK,
// snapshot.ExitTransient or snapshot.ExitPermanent).
func Main(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	experimental.SetDefaultBufferPool(messageBufferPool())
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
	res.PeakRSSBytes = peakRSS()
	agentio.WriteTerminationMessage(log, cfg.TerminationMessagePath, lookupEnv, snapshot.EncodeTerminationMessage(res))
	if err != nil {
		return res.Reason.ExitCode()
	}
	return snapshot.ExitOK
}
