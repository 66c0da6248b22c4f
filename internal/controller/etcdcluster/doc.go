// Package etcdcluster is the EtcdCluster controller: the only writer of etcd membership
// (style.md rule 2). Each pass builds a scope of observed facts (EtcdMembers, Pods, PVCs and the
// etcd view), asks the pure planner in internal/membership for at most one step, performs it
// through thin step functions, and patches status and the PodDisruptionBudget on every path.
//
// It creates and deletes EtcdMembers and writes their spec and the status fields memberID,
// isVoter and version; it never creates or deletes Pods, which belong to the EtcdMember
// controller. Design notes: docs/design/cluster-controller.md.
package etcdcluster
