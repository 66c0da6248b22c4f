package retention

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Policy is a schedule's spec.retention; a zero count is a rule that keeps nothing.
type Policy struct {
	KeepLast, KeepDaily, KeepWeekly int
}

// File is one snapshot file a schedule wrote: its snapshot's name and the slot that snapshot was
// taken for.
type File struct {
	Name string
	Slot time.Time
}

// Prune returns the files that no rule of p keeps, oldest first. Rules count from the newest
// slot down: keepLast keeps the newest KeepLast files; keepDaily the newest file of each of the
// newest KeepDaily days that have one; keepWeekly the same per ISO week. Days and weeks are read
// in loc, the schedule's zone, so that "daily" means the user's days. A file any rule keeps is
// kept.
func Prune(files []File, p Policy, loc *time.Location) []File {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return cmp.Or(b.Slot.Compare(a.Slot), cmp.Compare(b.Name, a.Name)) })
	keep := make([]bool, len(sorted))
	for i := range min(p.KeepLast, len(sorted)) {
		keep[i] = true
	}
	keepNewestPer(sorted, keep, p.KeepDaily, func(t time.Time) string { return t.In(loc).Format(time.DateOnly) })
	keepNewestPer(sorted, keep, p.KeepWeekly, func(t time.Time) string {
		y, w := t.In(loc).ISOWeek()
		return fmt.Sprintf("%d-W%02d", y, w)
	})
	var out []File
	for i := len(sorted) - 1; i >= 0; i-- {
		if !keep[i] {
			out = append(out, sorted[i])
		}
	}
	return out
}

// keepNewestPer marks the newest file of each of the newest n periods that have one; sorted is
// newest first.
func keepNewestPer(sorted []File, keep []bool, n int, period func(time.Time) string) {
	seen := map[string]bool{}
	for i, f := range sorted {
		if len(seen) >= n {
			return
		}
		key := period(f.Slot)
		if !seen[key] {
			seen[key] = true
			keep[i] = true
		}
	}
}
