package quorum

import "math"

// Of returns the quorum of n voters, q(n) = ⌊n/2⌋ + 1: the number of votes raft needs to commit
// an entry or elect a leader. Negative n is treated as 0.
func Of(n int) int {
	return max(n, 0)/2 + 1
}

// AvailableQuorum returns q(max(voters, target)): the number of Ready voters the Available
// condition requires (docs/design/quorum.md, "Available arithmetic"). Taking the larger of the two
// means a cluster that is still growing towards its target is not reported available on the
// strength of its seed alone, and a shrinking cluster keeps the stricter quorum of its current
// membership.
func AvailableQuorum(voters, target int) int {
	return Of(max(voters, target))
}

// MinAvailable returns the PodDisruptionBudget's integer minAvailable, q(max(voters, target)),
// or deletePDB when there are no voters (a paused or lost cluster has nothing to protect)
// (docs/design/quorum.md, "PDB arithmetic").
func MinAvailable(voters, target int) (value int32, deletePDB bool) {
	if voters <= 0 {
		return 0, true
	}
	q := AvailableQuorum(voters, target)
	if q > math.MaxInt32 {
		return math.MaxInt32, false
	}
	return int32(q), false //nolint:gosec // q ≤ math.MaxInt32 is checked just above.
}
