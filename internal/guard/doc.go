// Package guard is the data-dir guard that runs etcd in PVC-backed member Pods. etcd itself does
// not notice when the data dir of a member it knows is emptied while the member is its leader, or
// when the seed's data dir is emptied (its Pod still says --initial-cluster-state=new): the member
// rejoins with an empty log, which raft does not allow a voter to do. The guard refuses to start
// etcd in that case, with a message the EtcdMember controller classifies as DataLost, so the
// member is replaced through the quorum gate.
//
// It expects data when the operator says so (the member ran before the Pod was created) or when
// an earlier start in the same Pod wrote the WAL, which the guard records in a marker file on a
// volume that lives as long as the Pod.
package guard
