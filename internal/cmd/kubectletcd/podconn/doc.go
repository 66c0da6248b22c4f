// Package podconn derives, from one Pod alone, how to reach the etcd it runs: the port and scheme
// of its client listener, the DNS name its server certificate is verified against, and the
// Secrets its TLS files are mounted from. It is pure: the Pod is a value and no Secret is read
// here. It serves the compatibility mode `kubectl etcd --pod NAME`, which reaches etcd Pods this
// operator does not manage (yet), such as a legacy etcd.aenix.io member before etcd-migrate
// (docs/kubectl-etcd.md, "Compatibility mode (--pod)").
package podconn
