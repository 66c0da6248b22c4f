package snapshot

import (
	"fmt"
	"strconv"
)

// ScheduleConfig identifies the EtcdSnapshotSchedule a snapshot belongs to, and carries its
// retention (docs/backup-restore.md, "Retention").
type ScheduleConfig struct {
	// Name is the schedule's name: its snapshots, and so its artifacts, are named
	// <Name>-<slot in Unix minutes>.
	Name string
	// UID is the schedule's UID, recorded with the artifact (S3 metadata MetadataScheduleUID,
	// the ScheduleSuffix sibling on a PVC). Only artifacts that record it are ever pruned.
	UID string
	// Retention is the schedule's spec.retention; nil when it keeps every file.
	Retention *RetentionConfig
}

// RetentionConfig is a schedule's spec.retention. A zero count is a rule that keeps nothing.
type RetentionConfig struct {
	KeepLast, KeepDaily, KeepWeekly int
	// TimeZone is the schedule's IANA zone, in which days and weeks are counted; empty for UTC.
	// The agent loads it only when it prunes: an unknown zone fails the pruning, never the
	// snapshot that is already stored.
	TimeZone string
}

// schedule reads the schedule's identity and retention; nil for a snapshot no schedule owns.
func (p parser) schedule() *ScheduleConfig {
	name, uid := p.Optional(EnvScheduleName), p.Optional(EnvScheduleUID)
	retention := p.retention()
	switch {
	case name == "" && uid == "":
		if retention != nil {
			p.Fail(EnvScheduleName, "and "+EnvScheduleUID+" are required when a retention variable is set")
		}
		return nil
	case name == "" || uid == "":
		p.Fail(EnvScheduleName, "and "+EnvScheduleUID+" must be set together")
		return nil
	}
	if err := ValidateSnapshotName(name); err != nil {
		// Artifact names are matched against <name>-<digits>: a name that is no object name
		// could match files it should not.
		p.Fail(EnvScheduleName, "must be a Kubernetes object name (lowercase letters, digits, '-' and '.')")
	}
	return &ScheduleConfig{Name: name, UID: uid, Retention: retention}
}

// retention reads the retention variables; nil when none is set.
func (p parser) retention() *RetentionConfig {
	r := RetentionConfig{
		KeepLast:   p.count(EnvRetentionKeepLast),
		KeepDaily:  p.count(EnvRetentionKeepDaily),
		KeepWeekly: p.count(EnvRetentionKeepWeekly),
		TimeZone:   p.Optional(EnvRetentionTimeZone),
	}
	if r == (RetentionConfig{}) {
		return nil
	}
	if r.KeepLast == 0 && r.KeepDaily == 0 && r.KeepWeekly == 0 {
		p.Fail(EnvRetentionKeepLast, "or "+EnvRetentionKeepDaily+" or "+EnvRetentionKeepWeekly+" is required when "+EnvRetentionTimeZone+" is set")
		return nil
	}
	return &r
}

// count reads a positive integer; 0 when unset.
func (p parser) count(name string) int {
	v := p.Optional(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		p.Fail(name, fmt.Sprintf("must be a positive integer, not %q", v))
		return 0
	}
	return n
}
