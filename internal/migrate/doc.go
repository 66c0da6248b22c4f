// Package migrate holds etcd-migrate's decisions: adopting clusters of the legacy
// etcd.aenix.io/v1alpha1 operator in place (docs/migration.md). Its subpackages are pure:
// translate maps one discovered legacy cluster onto this project's API, plan orders the writes
// of its adoption; the command and its executors, which talk to Kubernetes and etcd, come on
// top of them.
package migrate
