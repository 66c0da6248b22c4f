// Package linearizability records the client-observed history of a key-value register workload
// (puts and linearizable gets against etcd) and checks it for linearizability with porcupine.
//
// A history is a list of operations, each with the time the client called it and the time the
// client saw its response. An operation whose outcome is unknown (a put whose response was lost:
// timeout, connection reset, leader change) may or may not have been applied, at any point after
// its call. Porcupine models that by giving the operation a return time after the end of the
// history; this package does the same, and then tightens it without changing the verdict (see
// Check).
//
// See https://anishathalye.com/testing-distributed-systems-for-linearizability/ for the model and
// https://github.com/etcd-io/etcd/tree/main/tests/robustness for the etcd robustness tests that
// use the same approach.
package linearizability
