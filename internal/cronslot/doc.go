// Package cronslot is the slot arithmetic that every cron-driven kind shares (EtcdDefragPolicy,
// docs/defrag.md; EtcdSnapshotSchedule, docs/backup-restore.md): which slot of a schedule is
// due, whether it gets a run, the deterministic name of that run, and the slot a name stands
// for. It is pure: values in, values out.
package cronslot
