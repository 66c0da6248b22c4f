// Package divergence decides, in pure code, whether one etcd member's keyspace differs from its
// peers' (docs/design/healing.md, "Keyspace hash comparison"): which revision to compare the
// members' HashKV at (Revision), what the answers say (Compare), and when a cluster is due for a
// comparison (Due). Since etcd 3.5.7 a CORRUPT alarm may carry member ID 0, so the alarm alone
// does not say which member is wrong; the comparison names it, and the EtcdCluster controller
// replaces it like any DataCorrupt member. The package does no I/O: the controller calls HashKV.
package divergence
