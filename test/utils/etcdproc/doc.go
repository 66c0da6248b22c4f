// Package etcdproc runs real etcd server processes on 127.0.0.1 for tests: a cluster of N
// members on free loopback ports, one data dir and log file per member, and per-member start,
// graceful stop, SIGKILL and health waits.
//
// It exists so that tests exercise etcd's real semantics (raft, WAL recovery after a crash,
// strict reconfiguration checks) rather than a fake. The binary comes from ETCD_BIN or
// $KUBEBUILDER_ASSETS/etcd, which `go run ./hack/binaries envtest` provides; tests skip with a
// clear message when neither exists (see RequireBinary). Tests that need a release of each
// supported minor, or its etcdctl and etcdutl, find them in ETCD_BIN_DIRS (see FindRelease).
//
// Members are started in their own process group with a parent-death signal, so a test binary
// that crashes does not leave etcd processes behind.
package etcdproc
