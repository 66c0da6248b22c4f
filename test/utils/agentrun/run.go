// Package agentrun runs the snapshot agent and the restore agent in-process for integration
// tests, as their container would but with the environment a test composes: the result comes
// back through the termination message file, as the controllers read it from the Pod.
package agentrun

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/restoreagent"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/internal/snapshotagent"
)

// Lookup reads env as os.LookupEnv reads the process environment.
func Lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// Snapshot runs snapshotagent.Run with env and returns its exit code and result. The agent's
// log is logged when it exits non-zero.
func Snapshot(ctx context.Context, tb testing.TB, env map[string]string) (int, snapshot.Result) {
	tb.Helper()
	return run(ctx, tb, snapshotagent.Run, snapshot.ParseTerminationMessage, env)
}

// Restore runs restoreagent.Run with env and returns its exit code and result. The agent's log
// is logged when it exits non-zero.
func Restore(ctx context.Context, tb testing.TB, env map[string]string) (int, restore.Result) {
	tb.Helper()
	return run(ctx, tb, restoreagent.Run, restore.ParseTerminationMessage, env)
}

// agentRun is the signature of both agents' Run.
type agentRun func(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int

// run points env's termination message at a temporary file, runs the agent and returns its
// exit code and the result parse reads from the termination message.
func run[R any](ctx context.Context, tb testing.TB, agent agentRun, parse func([]byte) (R, error), env map[string]string) (int, R) {
	tb.Helper()
	term := filepath.Join(tb.TempDir(), "termination-log")
	env[agentenv.EnvTerminationMessagePath] = term
	var log bytes.Buffer
	code := agent(ctx, nil, Lookup(env), &log)
	message, err := os.ReadFile(term)
	if err != nil {
		tb.Fatalf("no termination message (log: %s): %v", log.String(), err)
	}
	if code != 0 {
		tb.Logf("agent exited %d: %s", code, log.String())
	}
	res, err := parse(message)
	if err != nil {
		tb.Fatalf("termination message %s: %v", message, err)
	}
	return code, res
}
