// Package operator holds the integration tests of the etcd-operator binary: they build
// cmd/etcd-operator, run it as a subprocess against a real kube-apiserver and etcd (envtest) with
// only the RBAC generated from the code's markers, and check what a Deployment relies on: probes,
// metrics, the leader-election Lease, structured logs, a clean exit on SIGTERM that releases the
// Lease, and a non-zero exit that names the offending flag on bad configuration. Where a test must
// see everything a stop logs, the test binary itself runs the operator as the subprocess
// (startOperatorInProcess).
package operator
