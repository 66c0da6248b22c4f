// Package etcdsnapshot holds the controllers of backups (docs/backup-restore.md): the
// EtcdSnapshot controller, which runs one snapshot Job per EtcdSnapshot and records its result,
// and the EtcdSnapshotSchedule controller, which creates an EtcdSnapshot per slot of a cron
// schedule and keeps a bounded history of them.
package etcdsnapshot
