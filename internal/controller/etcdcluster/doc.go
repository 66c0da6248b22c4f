// Package etcdcluster is the EtcdCluster controller: the only writer of etcd membership
// (docs/design/house-rules.md, one writer of membership). Every pass runs three phases in order:
//
//   - observe (observe*.go): read the EtcdCluster, its EtcdMembers, Pods, PVCs, the TLS material
//     it asks for and etcd's view, once, into an immutable observation;
//   - plan (scope.go projects the observation; internal/membership decides): one pure call
//     returns the whole plan of the pass, the lock's decision, the writes that disrupt nothing
//     and the one membership change or member disruption;
//   - execute (execute_*.go, one file per kind of action; services.go, pdb.go and
//     status_write.go for the objects written on every pass): small executors that carry the
//     plan out, and status, rendered from the plan (status.go), patched once.
//
// It creates and deletes EtcdMembers and writes their spec and the status fields memberID,
// isVoter and version; it never creates or deletes Pods, which belong to the EtcdMember
// controller. Design: docs/design/reconcile-pass.md.
package etcdcluster
