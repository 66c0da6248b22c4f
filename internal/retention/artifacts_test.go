package retention

import (
	"slices"
	"testing"
	"time"
)

// TestExpiredTouchesOnlyTheSchedulesFiles: among files of every kind in one folder, only the
// schedule's own (named by slot and recording its UID) are candidates, and the newest three of
// them stay under keepLast 3.
func TestExpiredTouchesOnlyTheSchedulesFiles(t *testing.T) {
	t.Parallel()
	o := Owner{Name: "nightly", UID: "uid-nightly"}
	found := []Found{
		{"nightly-100", "uid-nightly"}, {"nightly-200", "uid-nightly"}, {"nightly-300", "uid-nightly"},
		{"nightly-400", "uid-nightly"}, {"nightly-500", "uid-nightly"},
		{"nightly-50", ""},                   // no recorded owner: written by hand, or by a one-off snapshot
		{"nightly-60", "uid-other"},          // a schedule of the same name, deleted and re-created
		{"nightly-eu-70", "uid-nightly"},     // not <nightly>-<digits>
		{"nightly-eu-80", "uid-nightly-eu"},  // the schedule nightly-eu's
		{"before-upgrade", "uid-nightly"},    // a name no slot gives
		{"nightly-", "uid-nightly"},          // no digits
		{"nightly-1x", "uid-nightly"},        // not only digits
		{"nightly-9999999999999999999", ""},  // out of range and unowned
		{"nightly-300", "uid-nightly"},       // listed twice
		{"nightly-000090", "uid-nightly-eu"}, // digits, but another UID
	}
	got := names(o.Expired(found, "nightly-500", Policy{KeepLast: 3}, time.UTC))
	if want := []string{"nightly-100", "nightly-200"}; !slices.Equal(got, want) {
		t.Errorf("expired %v, want %v", got, want)
	}
	if (Owner{Name: "nightly"}).Expired(found, "nightly-500", Policy{KeepLast: 1}, time.UTC) != nil {
		t.Error("an owner without a UID matched files that record none")
	}
	if !o.Candidate("nightly-29000000") || o.Candidate("nightly-eu-29000000") || o.Candidate("nightly") {
		t.Error("Candidate disagrees with cronslot.Name")
	}
}

// TestExpiredNeverTheFileJustWritten: a snapshot of an older slot that finishes after newer ones
// (concurrencyPolicy Allow) falls outside keepLast, but is not deleted by its own run; and the
// file just written counts even when the listing missed it.
func TestExpiredNeverTheFileJustWritten(t *testing.T) {
	t.Parallel()
	o := Owner{Name: "s", UID: "u"}
	found := []Found{{"s-1", "u"}, {"s-2", "u"}, {"s-3", "u"}}
	if got := o.Expired(found, "s-1", Policy{KeepLast: 1}, time.UTC); !slices.Equal(names(got), []string{"s-2"}) {
		t.Errorf("expired %v, want s-2 only (s-3 is the newest, s-1 was just written)", names(got))
	}
	if got := o.Expired(found[:2], "s-3", Policy{KeepLast: 2}, time.UTC); !slices.Equal(names(got), []string{"s-1"}) {
		t.Errorf("with s-3 missing from the listing: expired %v, want s-1", names(got))
	}
}
