// Package operator runs the etcd-operator process: it turns flags and environment variables into
// validated Options, builds the structured logger, and runs a controller-runtime manager with leader
// election, health probes and a metrics endpoint.
//
// It is the only place where the operator's process-wide wiring lives, so that cmd/etcd-operator stays
// a few lines long and every decision about configuration can be tested without starting a process.
// Controllers are not written here; they live under internal/controller/ and are registered in
// controllers.go.
package operator
