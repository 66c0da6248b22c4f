// Package retention decides what an EtcdSnapshotSchedule keeps (docs/backup-restore.md,
// "Retention"): which of its snapshot files stay at the destination (keepLast, keepDaily,
// keepWeekly), and which of its EtcdSnapshot objects stay in the API (the history limits). It is
// pure: values in, values out; the snapshot agent deletes files, the schedule controller objects.
package retention
