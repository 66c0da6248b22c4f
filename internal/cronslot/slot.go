package cronslot

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	// The operator's image holds no zone database: without the embedded copy every schedule
	// that names a zone other than UTC would fail to parse there.
	_ "time/tzdata"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// maxMissedSlots bounds the walk over missed slots: a schedule whose operator was down for a
// year on a once-a-minute schedule still plans in well under a millisecond.
const maxMissedSlots = 1 << 20

// Parse parses a schedule: five cron fields or a @ shorthand, read in UTC unless a
// CRON_TZ=<zone> prefix or timeZone (non-empty) names another zone.
func Parse(spec, timeZone string) (cron.Schedule, error) {
	if timeZone != "" {
		if _, err := time.LoadLocation(timeZone); err != nil {
			return nil, fmt.Errorf("unknown time zone %q: %w", timeZone, err)
		}
		spec = "CRON_TZ=" + timeZone + " " + spec
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("parsing schedule %q: %w", spec, err)
	}
	return s, nil
}

// Input is what one pass of a cron-driven controller decides over.
type Input struct {
	// Schedule is the parsed schedule.
	Schedule cron.Schedule
	// Since is status.lastScheduleTime, or the object's creation when it never scheduled.
	Since time.Time
	// Now is the pass's clock reading.
	Now time.Time
	// Suspend is spec.suspend.
	Suspend bool
	// Concurrency is spec.concurrencyPolicy.
	Concurrency etcdv1alpha2.ConcurrencyPolicy
	// StartingDeadline is spec.startingDeadlineSeconds; nil for none.
	StartingDeadline *int64
	// Active counts the runs that are not final.
	Active int
}

// Decision is whether to create the run of a slot, and when to look again.
type Decision struct {
	// Create is true when the run of Slot should be created now.
	Create bool
	// Slot is the most recent slot due (zero when none is).
	Slot time.Time
	// Skipped says why a due slot gets no run; empty otherwise.
	Skipped string
	// NextSlot is the first slot after Now: when the controller looks again.
	NextSlot time.Time
}

// Plan decides a pass: the most recent slot in (Since, Now] is due; it gets a run unless the
// object is suspended, the slot is later than startingDeadlineSeconds, or concurrencyPolicy
// Forbid and a run is still active. Earlier missed slots are dropped: one late run does what
// they would have.
func Plan(in Input) Decision {
	d := Decision{NextSlot: in.Schedule.Next(in.Now)}
	slot, ok := latestSlot(in.Schedule, in.Since, in.Now)
	if !ok {
		return d
	}
	d.Slot = slot
	switch {
	case in.Suspend:
		d.Skipped = "spec.suspend is true"
	case in.StartingDeadline != nil && in.Now.Sub(slot) > time.Duration(*in.StartingDeadline)*time.Second:
		d.Skipped = fmt.Sprintf("the slot %s was noticed %s late, past startingDeadlineSeconds %d",
			slot.UTC().Format(time.RFC3339), in.Now.Sub(slot).Truncate(time.Second), *in.StartingDeadline)
	case in.Concurrency != etcdv1alpha2.ConcurrencyAllow && in.Active > 0:
		d.Skipped = "concurrencyPolicy Forbid and the previous run is not final"
	default:
		d.Create = true
	}
	return d
}

// latestSlot returns the last activation of s in (since, now].
func latestSlot(s cron.Schedule, since, now time.Time) (time.Time, bool) {
	var last time.Time
	found := false
	for t, i := s.Next(since), 0; !t.IsZero() && !t.After(now) && i < maxMissedSlots; t, i = s.Next(t), i+1 {
		last, found = t, true
	}
	return last, found
}

// Name is the deterministic name of owner's run of slot: one object per slot, whatever a stale
// cache or a second operator replica believes.
func Name(owner string, slot time.Time) string {
	return fmt.Sprintf("%s-%d", owner, slot.Unix()/60)
}

// SlotOf is the slot that Name(owner, slot) stands for; false when name is no such name.
func SlotOf(owner, name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, owner+"-")
	if !ok || rest == "" || strings.TrimLeft(rest, "0123456789") != "" {
		return time.Time{}, false
	}
	minutes, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(minutes*60, 0).UTC(), true
}
