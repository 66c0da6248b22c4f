package defrag

import (
	"cmp"
	"slices"
	"time"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// DefaultHistoryLimit is how many final runs a policy keeps when spec.historyLimit is unset.
const DefaultHistoryLimit = 3

// Policy Ready reasons (docs/api.md, "EtcdDefragPolicy").
const (
	ReasonScheduled       = "Scheduled"
	ReasonSuspended       = "Suspended"
	ReasonInvalidSchedule = "InvalidSchedule"
	ReasonLastRunFailed   = "LastRunFailed"
	ReasonRunNotCreated   = "RunNotCreated"
)

// Prune names the final runs beyond the newest limit (by completion, then name), which the
// policy deletes. runs are the policy's own runs.
func Prune(runs []etcdv1alpha2.EtcdDefrag, limit int) []string {
	var final []*etcdv1alpha2.EtcdDefrag
	for i := range runs {
		if Final(runs[i].Status.Phase) && runs[i].DeletionTimestamp.IsZero() {
			final = append(final, &runs[i])
		}
	}
	slices.SortFunc(final, func(a, b *etcdv1alpha2.EtcdDefrag) int {
		return cmp.Or(completed(b).Compare(completed(a)), cmp.Compare(b.Name, a.Name))
	})
	var out []string
	for i, r := range final {
		if i >= max(limit, 0) {
			out = append(out, r.Name)
		}
	}
	slices.Sort(out)
	return out
}

// completed is when a final run completed, or its creation when it never recorded it.
func completed(r *etcdv1alpha2.EtcdDefrag) time.Time {
	if r.Status.CompletedAt != nil {
		return r.Status.CompletedAt.Time
	}
	return r.CreationTimestamp.Time
}
