package defrag

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

// quotaUsagePattern is the API's pattern for spec.rule.quotaUsageAbove.
var quotaUsagePattern = regexp.MustCompile(`^([1-9][0-9]?|100)%$`)

// ParseRule reads --rule into spec.rule: empty for the API's default, "all", or comma-separated
// free-space=Q, quota-usage=P% and min-reclaim=Q. It applies the API's validation rules
// (docs/defrag.md, "The rule") so that a mistake is a usage error here rather than a refused
// create.
func ParseRule(s string) (*etcdv1alpha2.DefragRule, error) {
	if s == "" {
		return nil, nil
	}
	if s == "all" {
		return &etcdv1alpha2.DefragRule{All: true}, nil
	}
	r := &etcdv1alpha2.DefragRule{}
	for part := range strings.SplitSeq(s, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, invocation.Usagef("--rule %q: %q is not key=value (or give --rule all)", s, part)
		}
		if err := setRule(r, key, value); err != nil {
			return nil, invocation.Usagef("--rule %q: %v", s, err)
		}
	}
	if r.MinReclaim != nil && r.QuotaUsageAbove == "" {
		return nil, invocation.Usagef("--rule %q: min-reclaim applies only to quota-usage; add quota-usage=P%%", s)
	}
	if r.MinReclaim != nil && r.FreeSpaceAbove != nil && r.MinReclaim.Cmp(*r.FreeSpaceAbove) > 0 {
		return nil, invocation.Usagef("--rule %q: min-reclaim must not exceed free-space (a member reclaiming free-space already qualifies)", s)
	}
	return r, nil
}

func setRule(r *etcdv1alpha2.DefragRule, key, value string) error {
	switch key {
	case "free-space":
		q, err := positive(key, value)
		r.FreeSpaceAbove = q
		return err
	case "min-reclaim":
		q, err := positive(key, value)
		r.MinReclaim = q
		return err
	case "quota-usage":
		if !quotaUsagePattern.MatchString(value) {
			return fmt.Errorf("quota-usage %q is not a percentage from 1%% to 100%%, such as 80%%", value)
		}
		r.QuotaUsageAbove = value
		return nil
	default:
		return fmt.Errorf("unknown key %q: use all, free-space=Q, quota-usage=P%% and min-reclaim=Q", key)
	}
}

func positive(key, value string) (*resource.Quantity, error) {
	q, err := resource.ParseQuantity(value)
	if err != nil || q.Sign() <= 0 {
		return nil, fmt.Errorf("%s %q is not a positive quantity, such as 200Mi", key, value)
	}
	return &q, nil
}

// describeRule renders spec.rule for the plan.
func describeRule(r *etcdv1alpha2.DefragRule) string {
	switch {
	case r == nil:
		return "rule default (members with more than 200Mi reclaimable)"
	case r.All:
		return "rule all (every member)"
	}
	var parts []string
	if r.FreeSpaceAbove != nil {
		parts = append(parts, "freeSpaceAbove "+r.FreeSpaceAbove.String())
	}
	if r.QuotaUsageAbove != "" {
		parts = append(parts, "quotaUsageAbove "+r.QuotaUsageAbove)
	}
	if r.MinReclaim != nil {
		parts = append(parts, "minReclaim "+r.MinReclaim.String())
	}
	return "rule " + strings.Join(parts, ", ")
}
