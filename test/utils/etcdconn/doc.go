// Package etcdconn dials etcd members from test code on the host: by Pod IP for members running
// in the local Kubernetes cluster, or by loopback address for processes from package etcdproc,
// with TLS optional.
//
// Host-side code must never resolve cluster names through the host's resolver, which points
// outside this machine (local-cluster.md, "Traps for tests that run on the host"). So endpoints
// here are IP literals only, found through the Kubernetes API; the TLS server name (the DNS SAN
// the member's certificate carries) is set for verification alone and never looked up. The
// client's endpoint auto-sync is left off, because it would replace the IPs with the members'
// advertised client URLs, which are DNS names.
package etcdconn
