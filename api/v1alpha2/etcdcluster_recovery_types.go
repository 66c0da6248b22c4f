package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// QuorumRecovery records a quorum-loss recovery in progress: which survivor it starts from and
// why it was allowed.
type QuorumRecovery struct {
	// member is the EtcdMember the cluster is recovered from.
	Member string `json:"member"`

	// memberID is its etcd member ID, in hex.
	MemberID string `json:"memberID"`

	// term is the term of the last entry of its raft log when recovery started.
	Term int64 `json:"term"`

	// index is the index of that last entry: every acknowledged write the recovery keeps is at
	// or below it.
	Index int64 `json:"index"`

	// mode is Automatic (no acknowledged write can be lost) or Approved (a person approved it
	// with the approve-recovery annotation).
	// +kubebuilder:validation:Enum=Automatic;Approved
	Mode string `json:"mode"`

	// startedAt is when the recovery was recorded.
	StartedAt metav1.Time `json:"startedAt"`
}

// Quorum recovery modes.
const (
	QuorumRecoveryAutomatic = "Automatic"
	QuorumRecoveryApproved  = "Approved"
)
