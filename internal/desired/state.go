package desired

import (
	"errors"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// ClusterState is etcd's --initial-cluster-state. etcd reads it only when the data directory is
// empty: "new" founds a fresh cluster with a fresh cluster ID, "existing" joins the cluster whose
// membership already lists this member. See
// https://etcd.io/docs/v3.6/op-guide/configuration/#--initial-cluster-state.
type ClusterState string

const (
	// ClusterStateNew founds a new cluster. Only the seed, on its very first start, may use it.
	ClusterStateNew ClusterState = "new"
	// ClusterStateExisting joins an existing cluster. It is also what any value other than
	// ClusterStateNew renders as, including the zero value: starting a member with an empty data
	// directory as "existing" fails loudly, while "new" would silently found a second, empty
	// cluster.
	ClusterStateExisting ClusterState = "existing"
)

// ErrParentUnreadable is returned by InitialClusterState when the parent EtcdCluster could not be
// read. Callers must not build a Pod in that case.
var ErrParentUnreadable = errors.New("the parent EtcdCluster could not be read, so the member's initial cluster state is unknown")

// InitialClusterState derives a member's --initial-cluster-state from the bootstrap phase
// (docs/design/membership-flows.md, "Bootstrap"): "new" only for the seed (spec.bootstrap), before
// etcd has reported a member ID for it and while its parent has no cluster ID; "existing"
// otherwise.
//
// parentClusterID is the parent's status.clusterID; parentReadable is false when reading the
// parent failed. That case fails closed with ErrParentUnreadable: treating an unreadable parent as
// "not formed yet" would let a seed that lost its data directory re-found an empty cluster under
// the old name and serve an empty keyspace, whereas refusing to build the Pod turns the loss into
// a visible failure that the replacement logic handles.
func InitialClusterState(member *etcdv1alpha2.EtcdMember, parentClusterID string, parentReadable bool) (ClusterState, error) {
	if !parentReadable {
		return "", ErrParentUnreadable
	}
	if member.Spec.Bootstrap && member.Status.MemberID == "" && parentClusterID == "" {
		return ClusterStateNew, nil
	}
	return ClusterStateExisting, nil
}
