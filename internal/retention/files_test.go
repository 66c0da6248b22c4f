package retention

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// hourly is a file per hour for days days, starting Monday 2025-01-06 00:00 UTC.
func hourly(days int) []File {
	start := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	var out []File
	for h := range days * 24 {
		slot := start.Add(time.Duration(h) * time.Hour)
		out = append(out, File{Name: fmt.Sprintf("s-%d", slot.Unix()/60), Slot: slot})
	}
	return out
}

func kept(all, pruned []File) []File {
	return slices.DeleteFunc(slices.Clone(all), func(f File) bool { return slices.Contains(pruned, f) })
}

func TestPruneKeepLast(t *testing.T) {
	t.Parallel()
	files := hourly(1)
	left := kept(files, Prune(files, Policy{KeepLast: 3}, time.UTC))
	if len(left) != 3 || !slices.Equal(left, files[21:]) {
		t.Errorf("keepLast 3 kept %v, want the newest three", left)
	}
	if got := Prune(files[:2], Policy{KeepLast: 3}, time.UTC); len(got) != 0 {
		t.Errorf("fewer files than keepLast pruned %v", got)
	}
}

func TestPruneKeepDailyAndWeekly(t *testing.T) {
	t.Parallel()
	files := hourly(21) // three ISO weeks, Monday to Sunday
	left := kept(files, Prune(files, Policy{KeepDaily: 3, KeepWeekly: 3}, time.UTC))
	var want []File
	for _, day := range []int{6, 13, 18, 19, 20} { // the last file of weeks 1 and 2, of the last three days
		want = append(want, files[day*24+23])
	}
	if !slices.Equal(left, want) {
		t.Errorf("kept %v,\nwant %v", names(left), names(want))
	}
}

// TestPruneDaysInTheScheduleZone: 23:30 UTC is already the next day in Berlin, so two files of
// one UTC day fall on two Berlin days: keepDaily counts the schedule's days, not UTC's.
func TestPruneDaysInTheScheduleZone(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	files := []File{{"a", day.Add(12 * time.Hour)}, {"b", day.Add(23*time.Hour + 30*time.Minute)}}
	if got := Prune(files, Policy{KeepDaily: 1}, time.UTC); !slices.Equal(got, files[:1]) {
		t.Errorf("UTC days: pruned %v, want a (b is the newest of the same day)", names(got))
	}
	if got := Prune(files, Policy{KeepDaily: 2}, berlin); len(got) != 0 {
		t.Errorf("Berlin days: pruned %v, want nothing (a and b fall on two days)", names(got))
	}
}

func TestPruneUnion(t *testing.T) {
	t.Parallel()
	files := hourly(2)
	left := kept(files, Prune(files, Policy{KeepLast: 2, KeepDaily: 2}, time.UTC))
	want := []File{files[23], files[46], files[47]}
	if !slices.Equal(left, want) {
		t.Errorf("kept %v, want %v", names(left), names(want))
	}
}

func names(fs []File) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}
