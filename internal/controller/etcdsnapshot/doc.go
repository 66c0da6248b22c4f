// Package etcdsnapshot holds the controllers of backups (docs/backup-restore.md): the
// EtcdSnapshotSchedule controller, which creates an EtcdSnapshot per slot of a cron schedule and
// keeps a bounded history of them.
package etcdsnapshot
