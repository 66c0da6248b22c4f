// Package etcdaccess says how the operator reaches one cluster's etcd: which Secrets hold the
// CA, the operator's client identity and root's password, the TLS configuration built from them,
// and the digests of the CA bundles that enter members' template hashes (docs/tls.md, docs/auth.md).
//
// Every controller that dials etcd builds its etcdclient.Config here, so that the cluster, member
// and defrag controllers present the same identity and verify the same names.
package etcdaccess
