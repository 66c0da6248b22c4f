// Package etcdmember is the EtcdMember controller: it materialises one etcd member as Kubernetes
// objects and reports what it observes (docs/design/membership-flows.md, "Division of labour").
// It creates the member's data PVC (data-<member>) and its Pod (<member>), deletes the Pod when
// the member is made dormant, when it failed, or for a rolling-update restart the EtcdCluster
// controller authorised, keeps the Pod's role=voter label and additionalMetadata in place, and
// writes the member's Pod-facing status (podName, podUID, pvcName, replicas, selector,
// restartBaseline) and its Ready, Updated, VersionDrifted and Healthy conditions (Healthy from
// internal/health).
//
// It never changes etcd membership (docs/design/house-rules.md, rule 2): the EtcdCluster
// controller adds, promotes and removes members and writes memberID, isVoter and version. The
// only etcd call made here is a read of MemberList, to decide whether the member-cleanup
// finalizer of a member being deleted may be released; the controller sees its etcd clients
// only through an interface with that one call, so no other compiles.
//
// The steps of a pass, and the reasons behind them, are written down in
// docs/design/member-controller.md.
package etcdmember
