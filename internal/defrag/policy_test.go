package defrag

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func corev1Ref(name string) corev1.LocalObjectReference {
	return corev1.LocalObjectReference{Name: name}
}

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	for spec, want := range map[string]time.Time{
		"0 3 * * *":                       time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC),
		"CRON_TZ=Europe/Berlin 0 3 * * *": time.Date(2025, 1, 2, 3, 0, 0, 0, berlin),
		"@hourly":                         time.Date(2025, 1, 1, 4, 0, 0, 0, time.UTC),
	} {
		s, err := ParseSchedule(spec)
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		if got := s.Next(t0); !got.Equal(want) {
			t.Errorf("%q: next after %s is %s, want %s", spec, t0, got, want)
		}
	}
	for _, bad := range []string{"", "0 3 * *", "61 * * * *", "CRON_TZ=Nowhere/Else 0 3 * * *"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestPlanPolicy(t *testing.T) {
	t.Parallel()
	hourly, err := ParseSchedule("0 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	slot := t0.Add(2 * time.Hour) // 05:00
	cases := []struct {
		name   string
		in     PolicyInput
		create bool
		slot   time.Time
		skip   bool
	}{
		{"nothing due yet", PolicyInput{Since: slot, Now: slot.Add(59 * time.Minute)}, false, time.Time{}, false},
		{"a slot is due", PolicyInput{Since: slot.Add(-time.Hour), Now: slot.Add(time.Second)}, true, slot, false},
		{"the slot itself is due at its minute", PolicyInput{Since: slot.Add(-time.Hour), Now: slot}, true, slot, false},
		{"only the latest missed slot runs", PolicyInput{Since: t0.Add(-24 * time.Hour), Now: slot.Add(time.Minute)}, true, slot, false},
		{"suspended", PolicyInput{Since: slot.Add(-time.Hour), Now: slot, Suspend: true}, false, slot, true},
		{"within the starting deadline", PolicyInput{Since: slot.Add(-time.Hour), Now: slot.Add(time.Minute), StartingDeadline: ptr.To[int64](60)}, true, slot, false},
		{"past the starting deadline", PolicyInput{Since: slot.Add(-time.Hour), Now: slot.Add(61 * time.Second), StartingDeadline: ptr.To[int64](60)}, false, slot, true},
		{"Forbid with an active run", PolicyInput{Since: slot.Add(-time.Hour), Now: slot, Active: 1}, false, slot, true},
		{"Allow with an active run", PolicyInput{Since: slot.Add(-time.Hour), Now: slot, Active: 1, Concurrency: etcdv1alpha2.ConcurrencyAllow}, true, slot, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.in.Schedule = hourly
			d := PlanPolicy(tc.in)
			if d.Create != tc.create || !d.Slot.Equal(tc.slot) || (d.Skipped != "") != tc.skip {
				t.Errorf("PlanPolicy = %+v, want create %v slot %s skipped %v", d, tc.create, tc.slot, tc.skip)
			}
			if !d.NextSlot.After(tc.in.Now) || d.NextSlot.Minute() != 0 {
				t.Errorf("next slot %s is not the next hour after %s", d.NextSlot, tc.in.Now)
			}
		})
	}
}

func TestRunName(t *testing.T) {
	t.Parallel()
	if got := RunName("nightly", t0); got != "nightly-28928340" {
		t.Errorf("RunName = %q", got)
	}
	if RunName("p", t0) != RunName("p", t0.Add(59*time.Second)) {
		t.Error("two names within one minute's slot")
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	at := func(name string, phase etcdv1alpha2.DefragPhase, done time.Duration) etcdv1alpha2.EtcdDefrag {
		r := run(name, "c", t0, phase)
		if phase != "" {
			r.Status.CompletedAt = &metav1.Time{Time: t0.Add(done)}
		}
		return r
	}
	runs := []etcdv1alpha2.EtcdDefrag{
		at("r1", etcdv1alpha2.DefragPhaseComplete, 1), at("r2", etcdv1alpha2.DefragPhaseFailed, 2),
		at("r3", etcdv1alpha2.DefragPhaseComplete, 3), at("r4", "", 0), at("r5", etcdv1alpha2.DefragPhaseComplete, 5),
	}
	for limit, want := range map[int][]string{0: {"r1", "r2", "r3", "r5"}, 2: {"r1", "r2"}, 3: {"r1"}, 10: nil} {
		got := Prune(runs, limit)
		if len(got) != len(want) {
			t.Errorf("limit %d: Prune = %v, want %v", limit, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("limit %d: Prune = %v, want %v", limit, got, want)
			}
		}
	}
}
