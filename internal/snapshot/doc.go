// Package snapshot is the contract between the EtcdSnapshot controller, the snapshot agent (the
// program a snapshot Job runs, package snapshotagent) and the restore that reads artifacts back:
// where an artifact and its sibling files go (layout.go), the environment the Job passes to the
// agent (config.go) with the schedule and retention a scheduled snapshot carries (schedule.go),
// the overwrite guard's rule (guard.go), and the result the agent reports
// through its container's termination message, with the reasons a failure can have
// (result.go). Everything here takes values and returns values; the I/O is in snapshotagent.
//
// What the agent writes, and why, is described in docs/backup-restore.md, "The snapshot agent".
package snapshot
