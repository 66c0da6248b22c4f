package operator

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/go-logr/logr"
)

// What controller-runtime's manager logs while it stops (sigs.k8s.io/controller-runtime
// pkg/manager/internal.go, engageStopProcedure and initLeaderElector). The texts are matched
// exactly: if a new controller-runtime version changes them, a clean stop logs errors again and
// TestCleanStopLogsNoError fails, rather than a real loss going unnoticed.
const (
	// managerCachesStopping is logged once the leader-election runnables, the controllers, have
	// returned (or the graceful shutdown timeout ran out; the manager then fails with its own
	// error).
	managerCachesStopping = "Stopping and waiting for caches"
	// managerErrorAfterStop is how the manager logs an error that arrives during its stop.
	managerErrorAfterStop = "error received after stop sequence was engaged"
	// managerLeaderElectionLost is the error the manager's OnStoppedLeading callback reports.
	// client-go calls that callback whenever leader election ends, also when the manager cancels
	// it on a requested stop after releasing the Lease, and on a standby that never led.
	managerLeaderElectionLost = "leader election lost"
)

// leaderElectionEndedMessage replaces managerErrorAfterStop for the expected end of leader
// election.
const leaderElectionEndedMessage = "Leader election ended with the stop, after the controllers had stopped"

// StopAwareLogger returns log with two changes, so that an operator on call is not paged for a
// clean stop. Run gives one to the controller manager, its controllers and client-go's leader
// election (the logger in the context the manager starts with); main sets one as klog's and
// controller-runtime's global logger, which the event recorder and some of controller-runtime's
// internals log through.
//
//   - once stopped is closed (the stop was requested), an error caused by the stop's cancellation
//     (errors.Is context.Canceled) is logged at info level: a reconcile pass cut short, whose
//     requests fail with "context canceled" (the next leader reruns the pass; every step is safe
//     to interrupt, docs/design/crash-safety.md), a Lease request in flight when the manager
//     cancelled leader election, or an Event being written when the manager stopped its recorder;
//   - once the manager has also stopped its controllers, the "leader election lost" error it
//     reports on every stop, after it cancelled leader election itself, is logged at info level.
//     Nothing acts on the cluster any more at that point, so no Lease can have been lost in a way
//     that matters.
//
// A loss reported while the controllers still run, during the stop or before it, stays an error
// (before the stop, Run also returns it), and so does every other error, including a failure to
// release the Lease and any error of a pass that is not the stop's cancellation.
func StopAwareLogger(log logr.Logger, stopped <-chan struct{}) logr.Logger {
	if log.GetSink() == nil {
		return log // logr.Discard()
	}
	return log.WithSink(&stopAwareSink{LogSink: log.GetSink(), state: &stopState{stopped: stopped}})
}

// stopState is shared by a stopAwareSink and every sink derived from it.
type stopState struct {
	// stopped is closed when the stop is requested.
	stopped <-chan struct{}
	// controllersStopped is set when the manager logs managerCachesStopping.
	controllersStopped atomic.Bool
}

func (st *stopState) stopRequested() bool {
	select {
	case <-st.stopped:
		return true
	default:
		return false
	}
}

// stopAwareSink is the logr.LogSink of StopAwareLogger.
type stopAwareSink struct {
	logr.LogSink
	state *stopState
}

var (
	_ logr.LogSink          = (*stopAwareSink)(nil)
	_ logr.CallDepthLogSink = (*stopAwareSink)(nil)
)

// Init tells the wrapped sink about the frame this one adds, so that caller annotations stay right.
func (s *stopAwareSink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	s.LogSink.Init(info)
}

// Enabled is true for level 0 even when the wrapped sink drops info records (--log-level=error),
// because Info must see managerCachesStopping whether or not it is written.
func (s *stopAwareSink) Enabled(level int) bool {
	return level == 0 || s.LogSink.Enabled(level)
}

func (s *stopAwareSink) Info(level int, msg string, keysAndValues ...any) {
	if msg == managerCachesStopping {
		s.state.controllersStopped.Store(true)
	}
	if s.LogSink.Enabled(level) {
		s.LogSink.Info(level, msg, keysAndValues...)
	}
}

func (s *stopAwareSink) Error(err error, msg string, keysAndValues ...any) {
	switch {
	case err == nil || !s.state.stopRequested():
		s.LogSink.Error(err, msg, keysAndValues...)
	case errors.Is(err, context.Canceled):
		s.info(msg, append(keysAndValues, "canceledByStop", err.Error()))
	case msg == managerErrorAfterStop && err.Error() == managerLeaderElectionLost && s.state.controllersStopped.Load():
		s.info(leaderElectionEndedMessage, append(keysAndValues, "managerReport", err.Error()))
	default:
		s.LogSink.Error(err, msg, keysAndValues...)
	}
}

func (s *stopAwareSink) info(msg string, keysAndValues []any) {
	if s.LogSink.Enabled(0) {
		s.LogSink.Info(0, msg, keysAndValues...)
	}
}

func (s *stopAwareSink) WithValues(keysAndValues ...any) logr.LogSink {
	return &stopAwareSink{LogSink: s.LogSink.WithValues(keysAndValues...), state: s.state}
}

func (s *stopAwareSink) WithName(name string) logr.LogSink {
	return &stopAwareSink{LogSink: s.LogSink.WithName(name), state: s.state}
}

// WithCallDepth keeps logr.Logger.WithCallDepth working when the wrapped sink supports it.
func (s *stopAwareSink) WithCallDepth(depth int) logr.LogSink {
	if sink, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return &stopAwareSink{LogSink: sink.WithCallDepth(depth), state: s.state}
	}
	return s
}
