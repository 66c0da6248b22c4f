package crd_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func quantity(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }

func defragRun(namespace, name string) *etcdv1alpha2.EtcdDefrag {
	return &etcdv1alpha2.EtcdDefrag{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       etcdv1alpha2.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}},
	}
}

// TestEtcdDefragRules runs each CEL rule and schema bound of EtcdDefrag's spec accepted and
// rejected, on create and on update.
func TestEtcdDefragRules(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	rule := func(r etcdv1alpha2.DefragRule) func(*etcdv1alpha2.EtcdDefrag) {
		return func(d *etcdv1alpha2.EtcdDefrag) { d.Spec.Rule = &r }
	}
	cases := []struct {
		name      string
		create    func(*etcdv1alpha2.EtcdDefrag)
		update    func(*etcdv1alpha2.EtcdDefrag)
		wantField string
		wantMsg   string
	}{
		{name: "no rule"},
		{name: "all", create: rule(etcdv1alpha2.DefragRule{All: true})},
		{name: "all: false with a threshold", create: rule(etcdv1alpha2.DefragRule{All: false, FreeSpaceAbove: quantity("1Gi")})},
		{name: "every threshold", create: rule(etcdv1alpha2.DefragRule{FreeSpaceAbove: quantity("200Mi"), QuotaUsageAbove: "80%", MinReclaim: quantity("200Mi")})},
		{name: "quotaUsageAbove 100%", create: rule(etcdv1alpha2.DefragRule{QuotaUsageAbove: "100%"})},
		{name: "all with a threshold", create: rule(etcdv1alpha2.DefragRule{All: true, QuotaUsageAbove: "80%"}),
			wantField: "spec.rule", wantMsg: etcdv1alpha2.MsgDefragRuleAllExclusive},
		{name: "minReclaim without quotaUsageAbove", create: rule(etcdv1alpha2.DefragRule{MinReclaim: quantity("32Mi")}),
			wantField: "spec.rule.minReclaim", wantMsg: etcdv1alpha2.MsgDefragMinReclaimNeedsQuota},
		{name: "minReclaim above freeSpaceAbove", create: rule(etcdv1alpha2.DefragRule{FreeSpaceAbove: quantity("100Mi"), QuotaUsageAbove: "80%", MinReclaim: quantity("101Mi")}),
			wantField: "spec.rule.minReclaim", wantMsg: etcdv1alpha2.MsgDefragMinReclaimAboveFreeSpace},
		{name: "freeSpaceAbove 0", create: rule(etcdv1alpha2.DefragRule{FreeSpaceAbove: quantity("0")}),
			wantField: "spec.rule.freeSpaceAbove", wantMsg: etcdv1alpha2.MsgDefragFreeSpacePositive},
		{name: "minReclaim 0", create: rule(etcdv1alpha2.DefragRule{QuotaUsageAbove: "80%", MinReclaim: quantity("0")}),
			wantField: "spec.rule.minReclaim", wantMsg: etcdv1alpha2.MsgDefragMinReclaimPositive},
		{name: "quotaUsageAbove 0%", create: rule(etcdv1alpha2.DefragRule{QuotaUsageAbove: "0%"}),
			wantField: "spec.rule.quotaUsageAbove", wantMsg: "should match"},
		{name: "quotaUsageAbove 101%", create: rule(etcdv1alpha2.DefragRule{QuotaUsageAbove: "101%"}),
			wantField: "spec.rule.quotaUsageAbove", wantMsg: "should match"},
		{name: "quotaUsageAbove without %", create: rule(etcdv1alpha2.DefragRule{QuotaUsageAbove: "80"}),
			wantField: "spec.rule.quotaUsageAbove", wantMsg: "should match"},
		{name: "negative TTL", create: func(d *etcdv1alpha2.EtcdDefrag) { d.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1) },
			wantField: "spec.ttlSecondsAfterFinished", wantMsg: "greater than or equal to 0"},
		{name: "no cluster", create: func(d *etcdv1alpha2.EtcdDefrag) { d.Spec.ClusterRef.Name = "" },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgDefragClusterRefName},
		{name: "cluster changed", update: func(d *etcdv1alpha2.EtcdDefrag) { d.Spec.ClusterRef.Name = "other" },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgDefragSpecImmutable},
		{name: "rule added", update: func(d *etcdv1alpha2.EtcdDefrag) { d.Spec.Rule = &etcdv1alpha2.DefragRule{All: true} },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgDefragSpecImmutable},
		{name: "TTL changed", update: func(d *etcdv1alpha2.EtcdDefrag) { d.Spec.TTLSecondsAfterFinished = ptr.To[int32](60) }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := defragRun(ns, fmt.Sprintf("d%d", i))
			if tc.create != nil {
				tc.create(d)
			}
			err := createAndUpdate(t, d, tc.update)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("want the object accepted, got: %v", err)
				}
				return
			}
			requireInvalid(t, err, tc.wantField, tc.wantMsg)
		})
	}
}

// TestEtcdDefragPhaseIsSticky writes status through the status subresource: Pending to
// Running to Complete is accepted, and Complete does not change again.
func TestEtcdDefragPhaseIsSticky(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	for _, final := range []etcdv1alpha2.DefragPhase{etcdv1alpha2.DefragPhaseComplete, etcdv1alpha2.DefragPhaseFailed} {
		d := defragRun(ns, "sticky-"+strings.ToLower(string(final)))
		if err := k8sClient.Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		for _, phase := range []etcdv1alpha2.DefragPhase{etcdv1alpha2.DefragPhasePending, etcdv1alpha2.DefragPhaseRunning, final, final} {
			d.Status.Phase = phase
			if err := k8sClient.Status().Update(t.Context(), d); err != nil {
				t.Fatalf("phase %s: %v", phase, err)
			}
		}
		d.Status.Phase = etcdv1alpha2.DefragPhaseRunning
		requireInvalid(t, k8sClient.Status().Update(t.Context(), d), "status.phase", etcdv1alpha2.MsgDefragPhaseFinal)
	}
}

// TestEtcdDefragPolicyRules runs each CEL rule and schema bound of EtcdDefragPolicy's spec
// accepted and rejected, and checks concurrencyPolicy's default.
func TestEtcdDefragPolicyRules(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := []struct {
		name      string
		create    func(*etcdv1alpha2.EtcdDefragPolicy)
		wantField string
		wantMsg   string
	}{
		{name: "five fields"},
		{name: "CRON_TZ prefix", create: func(p *etcdv1alpha2.EtcdDefragPolicy) { p.Spec.Schedule = "CRON_TZ=Europe/Berlin 0 3 * * 0" }},
		{name: "shorthand", create: func(p *etcdv1alpha2.EtcdDefragPolicy) { p.Spec.Schedule = "@daily" }},
		{name: "every field the reference sets", create: func(p *etcdv1alpha2.EtcdDefragPolicy) {
			p.Spec.Suspend, p.Spec.ConcurrencyPolicy = ptr.To(true), etcdv1alpha2.ConcurrencyAllow
			p.Spec.StartingDeadlineSeconds, p.Spec.HistoryLimit, p.Spec.TTLSecondsAfterFinished = ptr.To[int64](0), ptr.To[int32](0), ptr.To[int32](0)
			p.Spec.Rule = &etcdv1alpha2.DefragRule{QuotaUsageAbove: "80%", MinReclaim: quantity("64Mi")}
		}},
		{name: "four fields", create: func(p *etcdv1alpha2.EtcdDefragPolicy) { p.Spec.Schedule = "0 3 * *" },
			wantField: "spec.schedule", wantMsg: etcdv1alpha2.MsgDefragPolicySchedule},
		{name: "six fields", create: func(p *etcdv1alpha2.EtcdDefragPolicy) { p.Spec.Schedule = "0 0 3 * * *" },
			wantField: "spec.schedule", wantMsg: etcdv1alpha2.MsgDefragPolicySchedule},
		{name: "empty schedule", create: func(p *etcdv1alpha2.EtcdDefragPolicy) { p.Spec.Schedule = "" },
			wantField: "spec.schedule", wantMsg: "at least 1 chars long"},
		{name: "no cluster", create: func(p *etcdv1alpha2.EtcdDefragPolicy) { p.Spec.ClusterRef.Name = "" },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgDefragPolicyClusterRefName},
		{name: "unknown concurrencyPolicy", create: func(p *etcdv1alpha2.EtcdDefragPolicy) { p.Spec.ConcurrencyPolicy = "Replace" },
			wantField: "spec.concurrencyPolicy", wantMsg: "Unsupported value"},
		{name: "negative startingDeadlineSeconds", create: func(p *etcdv1alpha2.EtcdDefragPolicy) { p.Spec.StartingDeadlineSeconds = ptr.To[int64](-1) },
			wantField: "spec.startingDeadlineSeconds", wantMsg: "greater than or equal to 0"},
		{name: "negative historyLimit", create: func(p *etcdv1alpha2.EtcdDefragPolicy) { p.Spec.HistoryLimit = ptr.To[int32](-1) },
			wantField: "spec.historyLimit", wantMsg: "greater than or equal to 0"},
		{name: "the rule's rules apply", create: func(p *etcdv1alpha2.EtcdDefragPolicy) {
			p.Spec.Rule = &etcdv1alpha2.DefragRule{All: true, FreeSpaceAbove: quantity("1Mi")}
		}, wantField: "spec.rule", wantMsg: etcdv1alpha2.MsgDefragRuleAllExclusive},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &etcdv1alpha2.EtcdDefragPolicy{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%d", i)},
				Spec:       etcdv1alpha2.EtcdDefragPolicySpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: "0 3 * * *"},
			}
			if tc.create != nil {
				tc.create(p)
			}
			err := k8sClient.Create(t.Context(), p)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("want the object accepted, got: %v", err)
				}
				if tc.create == nil && p.Spec.ConcurrencyPolicy != etcdv1alpha2.ConcurrencyForbid {
					t.Errorf("concurrencyPolicy defaulted to %q, want Forbid", p.Spec.ConcurrencyPolicy)
				}
				return
			}
			requireInvalid(t, err, tc.wantField, tc.wantMsg)
		})
	}
}
