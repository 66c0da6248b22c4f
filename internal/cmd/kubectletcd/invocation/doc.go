// Package invocation holds what one run of kubectl-etcd has: its global flags, the
// dependencies every command receives (Kubernetes client, etcd dialer, clock, prompter, output
// streams) and the exit codes of docs/kubectl-etcd.md, "Exit codes". Commands get Deps, never
// globals, so that each is a plain function testable without cobra or a cluster.
package invocation
