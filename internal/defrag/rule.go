package defrag

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// Rule defaults (docs/api.md, "EtcdDefrag"). They are applied here rather than by the schema:
// a schema default on freeSpaceAbove would clash with all: true, which excludes it.
var (
	// DefaultFreeSpaceAbove applies when the rule sets no field at all.
	DefaultFreeSpaceAbove = resource.MustParse("200Mi")
	// DefaultMinReclaim applies when quotaUsageAbove is set and minReclaim is not.
	DefaultMinReclaim = resource.MustParse("32Mi")
)

// Sizes is what a member's Status says about its database, with the cluster's quota.
type Sizes struct {
	// DBSize is the database file's size; DBSizeInUse the part holding live data.
	DBSize, DBSizeInUse int64
	// Quota is the backend quota (--quota-backend-bytes) the member runs with.
	Quota int64
}

// Reclaimable is what a defragmentation would free.
func (s Sizes) Reclaimable() int64 { return max(0, s.DBSize-s.DBSizeInUse) }

// Evaluate reports whether rule selects a member with sizes, and why, in words for the
// member's status.reason. noSpace widens every rule while a NOSPACE alarm is active: a member
// with anything to reclaim qualifies, since the alarm can only be disarmed once every member's
// database is below the quota again.
func Evaluate(rule *etcdv1alpha2.DefragRule, s Sizes, noSpace bool) (bool, string) {
	r := effective(rule)
	switch {
	case r.All:
		return true, "rule all selects every member"
	case noSpace && s.Reclaimable() > 0:
		return true, fmt.Sprintf("a NOSPACE alarm is active and %s is reclaimable", Bytes(s.Reclaimable()))
	}
	var why []string
	if r.FreeSpaceAbove != nil {
		limit := r.FreeSpaceAbove.Value()
		if s.Reclaimable() > limit {
			return true, fmt.Sprintf("reclaimable %s is above freeSpaceAbove %s", Bytes(s.Reclaimable()), r.FreeSpaceAbove.String())
		}
		why = append(why, fmt.Sprintf("reclaimable %s is not above freeSpaceAbove %s", Bytes(s.Reclaimable()), r.FreeSpaceAbove.String()))
	}
	if r.QuotaUsageAbove != "" {
		ok, msg := quotaUsage(r, s)
		if ok {
			return true, msg
		}
		why = append(why, msg)
	}
	return false, strings.Join(why, "; ")
}

// quotaUsage evaluates quotaUsageAbove with its minReclaim.
func quotaUsage(r etcdv1alpha2.DefragRule, s Sizes) (bool, string) {
	pct, err := strconv.Atoi(strings.TrimSuffix(r.QuotaUsageAbove, "%"))
	if err != nil || s.Quota <= 0 {
		// The schema's pattern admits only 1%–100%; a quota is always known.
		return false, fmt.Sprintf("quotaUsageAbove %q cannot be evaluated", r.QuotaUsageAbove)
	}
	used := fmt.Sprintf("%s of the %s quota", Bytes(s.DBSize), Bytes(s.Quota))
	if s.DBSize*100 <= int64(pct)*s.Quota {
		return false, fmt.Sprintf("%s is not above quotaUsageAbove %s", used, r.QuotaUsageAbove)
	}
	if s.Reclaimable() < r.MinReclaim.Value() {
		return false, fmt.Sprintf("%s is above quotaUsageAbove %s, but reclaimable %s is below minReclaim %s",
			used, r.QuotaUsageAbove, Bytes(s.Reclaimable()), r.MinReclaim.String())
	}
	return true, fmt.Sprintf("%s is above quotaUsageAbove %s and %s is reclaimable", used, r.QuotaUsageAbove, Bytes(s.Reclaimable()))
}

// effective fills the defaults into a copy of rule.
func effective(rule *etcdv1alpha2.DefragRule) etcdv1alpha2.DefragRule {
	var r etcdv1alpha2.DefragRule
	if rule != nil {
		r = *rule.DeepCopy()
	}
	if !r.All && r.FreeSpaceAbove == nil && r.QuotaUsageAbove == "" {
		r.FreeSpaceAbove = &DefaultFreeSpaceAbove
	}
	if r.QuotaUsageAbove != "" && r.MinReclaim == nil {
		r.MinReclaim = &DefaultMinReclaim
	}
	return r
}

// Bytes renders n bytes for messages: exact bytes below 1 KiB, else MiB with one decimal.
func Bytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
