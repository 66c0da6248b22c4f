package cronslot

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// t0 is 2025-01-01 03:00 UTC.
var t0 = time.Date(2025, 1, 1, 3, 0, 0, 0, time.UTC)

func TestParse(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatalf("the embedded zone database is missing: %v", err)
	}
	for _, tc := range []struct {
		spec, zone string
		want       time.Time
	}{
		{"0 3 * * *", "", time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Europe/Berlin 0 3 * * *", "", time.Date(2025, 1, 2, 3, 0, 0, 0, berlin)},
		{"0 3 * * *", "Europe/Berlin", time.Date(2025, 1, 2, 3, 0, 0, 0, berlin)},
		{"@hourly", "", time.Date(2025, 1, 1, 4, 0, 0, 0, time.UTC)},
		{"@daily", "UTC", time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)},
	} {
		s, err := Parse(tc.spec, tc.zone)
		if err != nil {
			t.Fatalf("%q in %q: %v", tc.spec, tc.zone, err)
		}
		if got := s.Next(t0); !got.Equal(tc.want) {
			t.Errorf("%q in %q: next after %s is %s, want %s", tc.spec, tc.zone, t0, got, tc.want)
		}
	}
	for _, bad := range [][2]string{{"", ""}, {"0 3 * *", ""}, {"61 * * * *", ""}, {"CRON_TZ=Nowhere/Else 0 3 * * *", ""}, {"0 3 * * *", "Nowhere/Else"}} {
		if _, err := Parse(bad[0], bad[1]); err == nil {
			t.Errorf("%q in %q parsed", bad[0], bad[1])
		}
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	hourly, err := Parse("0 * * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	slot := t0.Add(2 * time.Hour) // 05:00
	cases := []struct {
		name   string
		in     Input
		create bool
		slot   time.Time
		skip   bool
	}{
		{"nothing due yet", Input{Since: slot, Now: slot.Add(59 * time.Minute)}, false, time.Time{}, false},
		{"a slot is due", Input{Since: slot.Add(-time.Hour), Now: slot.Add(time.Second)}, true, slot, false},
		{"the slot itself is due at its minute", Input{Since: slot.Add(-time.Hour), Now: slot}, true, slot, false},
		{"only the latest missed slot runs", Input{Since: t0.Add(-24 * time.Hour), Now: slot.Add(time.Minute)}, true, slot, false},
		{"suspended", Input{Since: slot.Add(-time.Hour), Now: slot, Suspend: true}, false, slot, true},
		{"within the starting deadline", Input{Since: slot.Add(-time.Hour), Now: slot.Add(time.Minute), StartingDeadline: ptr.To[int64](60)}, true, slot, false},
		{"past the starting deadline", Input{Since: slot.Add(-time.Hour), Now: slot.Add(61 * time.Second), StartingDeadline: ptr.To[int64](60)}, false, slot, true},
		{"Forbid with an active run", Input{Since: slot.Add(-time.Hour), Now: slot, Active: 1}, false, slot, true},
		{"Allow with an active run", Input{Since: slot.Add(-time.Hour), Now: slot, Active: 1, Concurrency: etcdv1alpha2.ConcurrencyAllow}, true, slot, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.in.Schedule = hourly
			d := Plan(tc.in)
			if d.Create != tc.create || !d.Slot.Equal(tc.slot) || (d.Skipped != "") != tc.skip {
				t.Errorf("Plan = %+v, want create %v slot %s skipped %v", d, tc.create, tc.slot, tc.skip)
			}
			if !d.NextSlot.After(tc.in.Now) || d.NextSlot.Minute() != 0 {
				t.Errorf("next slot %s is not the next hour after %s", d.NextSlot, tc.in.Now)
			}
		})
	}
}

func TestNameAndSlotOf(t *testing.T) {
	t.Parallel()
	if got := Name("nightly", t0); got != "nightly-28928340" {
		t.Errorf("Name = %q", got)
	}
	if Name("p", t0) != Name("p", t0.Add(59*time.Second)) {
		t.Error("two names within one minute's slot")
	}
	if slot, ok := SlotOf("nightly", Name("nightly", t0)); !ok || !slot.Equal(t0) {
		t.Errorf("SlotOf(Name) = %s, %v; want %s", slot, ok, t0)
	}
	// A schedule whose name is another's prefix must not claim its runs.
	for _, name := range []string{"nightly-eu-28928340", "nightly-", "nightly-12a", "weekly-28928340", "nightly"} {
		if _, ok := SlotOf("nightly", name); ok {
			t.Errorf("SlotOf(nightly, %q) claimed it", name)
		}
	}
}
