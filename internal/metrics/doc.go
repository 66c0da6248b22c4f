// Package metrics defines the operator's own Prometheus metrics
// (docs/design/conditions-and-events.md) and registers them with controller-runtime's registry,
// which the manager serves at /metrics next to the library's defaults (reconcile counts and
// durations per controller, work-queue depths).
//
// Controllers record through the functions here, never through the collectors directly, so the
// label sets stay closed and cardinality bounded: action types and outcomes are fixed words,
// steps are the reconciler's step names, and per-cluster state is folded into counts per reason.
// The backup metrics (snapshot.go) are the exception: they are per cluster, because an alert on
// a missing backup must name the cluster, and a deleted cluster's series are dropped.
package metrics
