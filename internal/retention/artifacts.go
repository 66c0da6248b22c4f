package retention

import (
	"time"

	"github.com/etcd-operator/etcd-operator/internal/cronslot"
)

// Found is a snapshot file found at a destination.
type Found struct {
	// Name is the snapshot's name: the file's name without ".db".
	Name string
	// ScheduleUID is the schedule UID recorded with the file; empty when none is.
	ScheduleUID string
}

// Owner is the schedule whose files are pruned: its name and UID.
type Owner struct {
	Name, UID string
}

// Candidate reports whether name can be one of o's snapshots, <schedule>-<slot in Unix
// minutes>: only such files are worth reading a recorded owner for. A schedule whose name
// extends another's ("nightly-eu" and "nightly") never matches the other's files, since only
// digits may follow the dash.
func (o Owner) Candidate(name string) bool {
	_, ok := cronslot.SlotOf(o.Name, name)
	return ok
}

// Expired returns the files of o among found that no rule of p keeps, oldest first (Prune, with
// days and weeks read in loc). A file is o's when it is named as o's snapshots are and records
// o's UID: a one-off snapshot, another schedule's file or a file without a recorded owner is
// never returned, whatever its name. justWritten, the snapshot this run stored, counts as one
// of o's files even when the listing did not show it (a store whose listing lags must not make
// the rules count one file short) and is never returned: a snapshot finishing after a newer
// one does not delete itself.
func (o Owner) Expired(found []Found, justWritten string, p Policy, loc *time.Location) []File {
	var files []File
	seen := map[string]bool{}
	add := func(name string) {
		if slot, ok := cronslot.SlotOf(o.Name, name); ok && !seen[name] {
			seen[name] = true
			files = append(files, File{Name: name, Slot: slot})
		}
	}
	add(justWritten)
	for _, f := range found {
		if o.UID != "" && f.ScheduleUID == o.UID {
			add(f.Name)
		}
	}
	var out []File
	for _, f := range Prune(files, p, loc) {
		if f.Name != justWritten {
			out = append(out, f)
		}
	}
	return out
}
