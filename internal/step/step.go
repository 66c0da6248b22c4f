package step

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// ConflictRetry is how soon a pass that met an API conflict, or an AlreadyExists from a stale
// cache, runs again: both say "look again", not "something failed".
const ConflictRetry = time.Second

// Result says how a pass goes on after a step. The zero value is Continue.
type Result struct {
	stop         bool
	requeueAfter time.Duration
	reason       string
}

// Continue lets the next step run.
var Continue = Result{}

// Stop ends the pass without a requeue of its own: a watch event continues. reason is logged.
func Stop(reason string) Result { return Result{stop: true, reason: reason} }

// Requeue ends the pass and asks for another one after d (a named interval, never a bare
// literal). reason is logged. A non-positive d is a Stop.
func Requeue(d time.Duration, reason string) Result {
	if d <= 0 {
		return Stop(reason)
	}
	return Result{stop: true, requeueAfter: d, reason: reason}
}

// Done reports whether the step ended the pass.
func (r Result) Done() bool { return r.stop }

// RequeueAfter is the interval the step asked for; zero leaves it to watches.
func (r Result) RequeueAfter() time.Duration { return r.requeueAfter }

// Reason says why the step ended the pass; empty for Continue.
func (r Result) Reason() string { return r.reason }

// Sooner returns r with its requeue interval lowered to d when d is positive and sooner (a
// running grace that must be looked at again before the step's own interval).
func (r Result) Sooner(d time.Duration) Result {
	if d > 0 && (r.requeueAfter == 0 || d < r.requeueAfter) {
		r.requeueAfter = d
	}
	return r
}

// Ctrl converts r to controller-runtime's result.
func (r Result) Ctrl() ctrl.Result { return ctrl.Result{RequeueAfter: r.requeueAfter} }

// Named is a step with the name it is logged and measured under.
type Named struct {
	Name string
	Run  func(ctx context.Context) (Result, error)
}

// Run runs steps in order until one fails or ends the pass, and returns that step's result.
// observe, when not nil, is told how long each step took (metrics).
func Run(ctx context.Context, observe func(name string, took time.Duration), steps ...Named) (Result, error) {
	for _, st := range steps {
		start := time.Now()
		res, err := st.Run(ctx)
		if observe != nil {
			observe(st.Name, time.Since(start))
		}
		if err != nil {
			return Result{}, err
		}
		if res.Done() {
			if res.reason != "" {
				logf.FromContext(ctx).V(1).Info("Pass ended early", "step", st.Name, "reason", res.reason, "requeueAfter", res.requeueAfter)
			}
			return res, nil
		}
	}
	return Continue, nil
}

// Finish turns a pass's outcome into controller-runtime's result: API conflicts and
// AlreadyExists requeue quietly after ConflictRetry; other errors are returned (controller-
// runtime backs off); otherwise the step's interval.
func Finish(res Result, err error) (ctrl.Result, error) {
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return ctrl.Result{RequeueAfter: ConflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	return res.Ctrl(), nil
}
