package agentio

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// StartProcess prepares an agent's process: unless GOMEMLIMIT sets one, it gives the Go runtime
// the soft memory limit memoryLimit (bytes), and it returns a context cancelled on SIGTERM or
// SIGINT, the kubelet's signal at a deadline or a Pod deletion. Call stop when the run ends.
func StartProcess(lookupEnv func(string) (string, bool), memoryLimit int64) (ctx context.Context, stop context.CancelFunc) {
	if _, set := lookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
	}
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
}

// NewLogger logs as JSON to stderr, named after the agent's command.
func NewLogger(stderr io.Writer, command string) logr.Logger {
	return logr.FromSlogHandler(slog.NewJSONHandler(stderr, nil)).WithName(command)
}

// NoArguments refuses arguments as an InvalidConfig failure: an agent is configured by
// environment variables only.
func NoArguments(command string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return snapshot.Failf(snapshot.ReasonInvalidConfig, "%s takes no arguments (it is configured by environment variables), got %q", command, args)
}

// Task names an agent's work in the failures Within reports.
type Task struct {
	// Name is what may not finish in time, e.g. "the snapshot".
	Name string
	// Done is what an interruption stops short of, e.g. "the snapshot was stored".
	Done string
}

// Within runs work within timeout. When the run ends because time ran out
// (ReasonDeadlineExceeded) or because the agent was asked to stop (ReasonInterrupted, ctx
// cancelled), that is the reason reported, not the error of whichever call the cancellation
// happened to interrupt. What work returned is kept either way.
func Within[R any](ctx context.Context, timeout time.Duration, task Task, work func(context.Context) (R, error)) (R, error) {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := work(runCtx)
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return res, snapshot.Failf(snapshot.ReasonInterrupted, "stopped before %s: %w", task.Done, err)
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return res, snapshot.Failf(snapshot.ReasonDeadlineExceeded, "%s did not finish within %s: %w", task.Name, timeout, err)
	}
	return res, err
}

// WriteTerminationMessage writes message, an encoded result, where the kubelet reads the
// container's termination message, which the controllers read from the Pod's status: no log
// reading, no pods/log permission. path is the parsed configuration's; when the environment did
// not parse it is empty, and the result still goes where the Pod expects it. A failure to write
// is logged: the exit code still tells the kind of failure.
func WriteTerminationMessage(log logr.Logger, path string, lookupEnv func(string) (string, bool), message []byte) {
	if path == "" {
		path = agentenv.TerminationMessagePath(lookupEnv)
	}
	if err := os.WriteFile(path, message, 0o600); err != nil {
		log.Error(err, "writing the termination message", "path", path)
	}
}
