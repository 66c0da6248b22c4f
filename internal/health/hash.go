package health

import "fmt"

// HashDivergedMessage is the Healthy message of a member whose keyspace hash the EtcdCluster
// controller's comparison found different from the majority's at revision rev
// (docs/design/healing.md, "Keyspace hash comparison"). The cluster controller's own verdict
// uses it too, so both say the same.
func HashDivergedMessage(rev int64) string {
	return fmt.Sprintf("its keyspace hash differs from the majority at revision %d: its data diverged from its peers', so it is replaced", rev)
}

// hashDiverged: the keyspace hash comparison named this member. Since etcd 3.5.7 a CORRUPT
// alarm may carry member ID 0 and name nobody; the comparison does.
func (c *classifier) hashDiverged() (Result, bool) {
	if c.obs.Etcd.HashDiffersAt == 0 {
		return Result{}, false
	}
	return unhealthy(ReasonDataCorrupt, HashDivergedMessage(c.obs.Etcd.HashDiffersAt), ActionReplace), true
}
