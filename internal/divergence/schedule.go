package divergence

import "time"

// Timings of the comparison (docs/design/timings.md). HashKV reads a member's whole keyspace, so
// an idle cluster is compared only every Interval, not on every resync.
const (
	// Interval is how often a healthy cluster's keyspace hashes are compared.
	Interval = 5 * time.Minute
	// AlarmRecheck is how often they are compared while a CORRUPT alarm with member ID 0 stays
	// active: the alarm stops writes cluster-wide, so its cause is worth looking at again soon,
	// and no write moves the revisions meanwhile.
	AlarmRecheck = 30 * time.Second
)

// Schedule is what the controller remembers of a cluster's last comparison.
type Schedule struct {
	// Last is when the last comparison ran; zero when this process never compared the cluster.
	Last time.Time
	// UnderAlarm is true when a CORRUPT alarm with member ID 0 was active at the last comparison.
	UnderAlarm bool
}

// Input is what one pass observed that decides whether a comparison is due.
type Input struct {
	// Now is the pass's clock reading.
	Now time.Time
	// Voters is how many voters etcd lists.
	Voters int
	// AllAnswered is true when every voter answered Status in this pass.
	AllAnswered bool
	// Alarm is true when a CORRUPT alarm with member ID 0 is active.
	Alarm bool
	// Interval overrides the package's Interval when positive (tests).
	Interval time.Duration
}

// Due reports whether the pass should compare the voters' keyspace hashes: never with fewer than
// two voters (nothing to compare with) or while a voter did not answer Status (its HashKV would
// only hold the pass, and the comparison could not conclude Consistent); at once when a CORRUPT
// alarm with member ID 0 appeared since the last comparison; every AlarmRecheck while it stays;
// otherwise on the first pass of this process and every Interval after.
func Due(s Schedule, in Input) bool {
	if in.Voters < 2 || !in.AllAnswered {
		return false
	}
	interval := Interval
	if in.Interval > 0 {
		interval = in.Interval
	}
	switch {
	case in.Alarm && !s.UnderAlarm:
		return true
	case in.Alarm:
		interval = min(interval, AlarmRecheck)
	case s.Last.IsZero():
		return true
	}
	return !in.Now.Before(s.Last.Add(interval))
}
