package defrag

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

const mib = 1 << 20

func q(s string) *resource.Quantity {
	v := resource.MustParse(s)
	return &v
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	quota := int64(1024 * mib)
	sizes := func(db, inUse int64) Sizes { return Sizes{DBSize: db * mib, DBSizeInUse: inUse * mib, Quota: quota} }
	cases := []struct {
		name    string
		rule    *etcdv1alpha2.DefragRule
		sizes   Sizes
		noSpace bool
		want    bool
	}{
		{"no rule, 201Mi reclaimable", nil, sizes(300, 99), false, true},
		{"no rule, 200Mi reclaimable is not above", nil, sizes(300, 100), false, false},
		{"empty rule defaults like no rule", &etcdv1alpha2.DefragRule{}, sizes(300, 99), false, true},
		{"all selects a compact member", &etcdv1alpha2.DefragRule{All: true}, sizes(10, 10), false, true},
		{"freeSpaceAbove 10Mi", &etcdv1alpha2.DefragRule{FreeSpaceAbove: q("10Mi")}, sizes(30, 19), false, true},
		{"freeSpaceAbove 10Mi, 10Mi reclaimable", &etcdv1alpha2.DefragRule{FreeSpaceAbove: q("10Mi")}, sizes(30, 20), false, false},
		{"quota usage above, default minReclaim met", &etcdv1alpha2.DefragRule{QuotaUsageAbove: "50%"}, sizes(600, 500), false, true},
		{"quota usage above, default minReclaim missed", &etcdv1alpha2.DefragRule{QuotaUsageAbove: "50%"}, sizes(600, 590), false, false},
		{"quota usage at the threshold is not above", &etcdv1alpha2.DefragRule{QuotaUsageAbove: "50%"}, sizes(512, 0), false, false},
		{"quota usage with minReclaim 1Mi", &etcdv1alpha2.DefragRule{QuotaUsageAbove: "50%", MinReclaim: q("1Mi")}, sizes(600, 598), false, true},
		{"quota rule alone ignores the freeSpace default", &etcdv1alpha2.DefragRule{QuotaUsageAbove: "90%"}, sizes(600, 100), false, false},
		{"either threshold: freeSpace hits", &etcdv1alpha2.DefragRule{FreeSpaceAbove: q("100Mi"), QuotaUsageAbove: "90%"}, sizes(600, 100), false, true},
		{"either threshold: quota hits", &etcdv1alpha2.DefragRule{FreeSpaceAbove: q("500Mi"), QuotaUsageAbove: "50%"}, sizes(600, 500), false, true},
		{"NOSPACE widens the rule", nil, sizes(1024, 1000), true, true},
		{"NOSPACE with nothing to reclaim", nil, sizes(1024, 1024), true, false},
		{"100% quota usage needs more than the quota", &etcdv1alpha2.DefragRule{QuotaUsageAbove: "100%"}, sizes(1024, 0), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, why := Evaluate(tc.rule, tc.sizes, tc.noSpace)
			if got != tc.want || why == "" {
				t.Errorf("Evaluate = %v (%q), want %v with a reason", got, why, tc.want)
			}
		})
	}
}

func TestEvaluateDoesNotModifyTheRule(t *testing.T) {
	t.Parallel()
	r := &etcdv1alpha2.DefragRule{QuotaUsageAbove: "50%"}
	Evaluate(r, Sizes{DBSize: 1, Quota: 2}, false)
	if r.MinReclaim != nil || r.FreeSpaceAbove != nil {
		t.Errorf("Evaluate wrote defaults into the spec's rule: %+v", r)
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "0.0 MiB", 3 * mib / 2: "1.5 MiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
