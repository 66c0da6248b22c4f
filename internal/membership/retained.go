package membership

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// RetainedDataWait is how soon a cluster whose retained PVCs disagree looks again. The PVC watch
// brings a pass when a person deletes one; this only bounds a missed event.
const RetainedDataWait = 30 * time.Second

// adoptRetained starts a new cluster (no cluster ID, no EtcdMember) on the data an earlier
// cluster of the same name kept under reclaimPolicy Retain, instead of bootstrapping an empty one
// beside it (docs/design/storage.md, "Reclaim policy"): it latches the cluster ID those PVCs
// record, and re-adoption (readopt, rule 3: total member loss) then gives each PVC its member back
// under the old name, member ID and data. PVCs recording different cluster IDs are two clusters'
// data: nothing is started until a person deletes the PVCs of the one not wanted.
func adoptRetained(s *Scope) (Action, bool) {
	byID := map[string][]string{}
	for _, p := range s.PVCs {
		if p.Retained != "" && !p.Deleting {
			byID[p.Retained] = append(byID[p.Retained], p.Name)
		}
	}
	ids := slices.Sorted(maps.Keys(byID))
	switch len(ids) {
	case 0:
		return Action{}, false
	case 1:
		slices.Sort(byID[ids[0]])
		return Action{Kind: KindLatchClusterID, ClusterID: ids[0], Reason: ReasonBootstrapping,
			Message: fmt.Sprintf("taking over the data an earlier cluster of this name kept (reclaimPolicy Retain): cluster ID %s, PVCs %s",
				ids[0], strings.Join(byID[ids[0]], ", "))}, true
	}
	var parts []string
	for _, id := range ids {
		slices.Sort(byID[id])
		parts = append(parts, fmt.Sprintf("cluster ID %s in %s", id, strings.Join(byID[id], ", ")))
	}
	return Action{Kind: KindWait, Reason: ReasonBootstrapping, RequeueAfter: RetainedDataWait,
		Message: "PVCs kept by earlier clusters of this name hold the data of different clusters (" + strings.Join(parts, "; ") +
			"); delete the PVCs of the one not wanted, and the cluster starts on the other"}, true
}
