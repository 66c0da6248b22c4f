// Package step is the result type every reconcile step of every controller returns: go on to
// the next step, stop the pass, or requeue it after a named interval, each with a reason for the
// log. Both controllers run their steps through Run and finish a pass through Finish, so they
// read alike and treat API conflicts the same way (docs/design/reconcile-pass.md).
package step
