package defrag

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// DefaultHistoryLimit is how many final runs a policy keeps when spec.historyLimit is unset.
const DefaultHistoryLimit = 3

// maxMissedSlots bounds the walk over missed slots: a policy whose operator was down for a
// year on a once-a-minute schedule still plans in well under a millisecond.
const maxMissedSlots = 1 << 20

// Policy Ready reasons (docs/api.md, "EtcdDefragPolicy").
const (
	ReasonScheduled       = "Scheduled"
	ReasonSuspended       = "Suspended"
	ReasonInvalidSchedule = "InvalidSchedule"
	ReasonLastRunFailed   = "LastRunFailed"
	ReasonRunNotCreated   = "RunNotCreated"
)

// ParseSchedule parses spec.schedule: five cron fields, or a @ shorthand, read in UTC unless a
// CRON_TZ=<zone> prefix names another zone.
func ParseSchedule(spec string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("parsing schedule %q: %w", spec, err)
	}
	return s, nil
}

// PolicyInput is what one pass of the policy controller decides over.
type PolicyInput struct {
	// Schedule is the parsed spec.schedule.
	Schedule cron.Schedule
	// Since is status.lastScheduleTime, or the policy's creation when it never scheduled.
	Since time.Time
	// Now is the pass's clock reading.
	Now time.Time
	// Suspend is spec.suspend.
	Suspend bool
	// Concurrency is spec.concurrencyPolicy.
	Concurrency etcdv1alpha2.ConcurrencyPolicy
	// StartingDeadline is spec.startingDeadlineSeconds; nil for none.
	StartingDeadline *int64
	// Active counts the policy's runs that are not final.
	Active int
}

// PolicyDecision is whether to create the run of a slot, and when to look again.
type PolicyDecision struct {
	// Create is true when the run of Slot should be created now.
	Create bool
	// Slot is the most recent slot due (zero when none is).
	Slot time.Time
	// Skipped says why a due slot gets no run; empty otherwise.
	Skipped string
	// NextSlot is the first slot after Now: when the controller looks again.
	NextSlot time.Time
}

// PlanPolicy decides a pass of a policy (docs/defrag.md, "EtcdDefragPolicy"): the most recent
// slot in (Since, Now] is due; it gets a run unless the policy is suspended, the slot is later
// than startingDeadlineSeconds, or concurrencyPolicy Forbid and a run is still active. Earlier
// missed slots are dropped: one late run does what they would have.
func PlanPolicy(in PolicyInput) PolicyDecision {
	d := PolicyDecision{NextSlot: in.Schedule.Next(in.Now)}
	slot, ok := latestSlot(in.Schedule, in.Since, in.Now)
	if !ok {
		return d
	}
	d.Slot = slot
	switch {
	case in.Suspend:
		d.Skipped = "the policy is suspended"
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

// RunName is the deterministic name of the run of policy's slot: one object per slot, whatever
// a stale cache or a second operator replica believes.
func RunName(policy string, slot time.Time) string {
	return fmt.Sprintf("%s-%d", policy, slot.Unix()/60)
}

// Prune names the final runs beyond the newest limit (by completion, then name), which the
// policy deletes. runs are the policy's own runs.
func Prune(runs []etcdv1alpha2.EtcdDefrag, limit int) []string {
	var final []*etcdv1alpha2.EtcdDefrag
	for i := range runs {
		if Final(runs[i].Status.Phase) && runs[i].DeletionTimestamp.IsZero() {
			final = append(final, &runs[i])
		}
	}
	slices.SortFunc(final, func(a, b *etcdv1alpha2.EtcdDefrag) int {
		return cmp.Or(completed(b).Compare(completed(a)), cmp.Compare(b.Name, a.Name))
	})
	var out []string
	for i, r := range final {
		if i >= max(limit, 0) {
			out = append(out, r.Name)
		}
	}
	slices.Sort(out)
	return out
}

// completed is when a final run completed, or its creation when it never recorded it.
func completed(r *etcdv1alpha2.EtcdDefrag) time.Time {
	if r.Status.CompletedAt != nil {
		return r.Status.CompletedAt.Time
	}
	return r.CreationTimestamp.Time
}
