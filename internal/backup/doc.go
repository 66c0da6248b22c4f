// Package backup decides an EtcdSnapshot's life (docs/backup-restore.md, "How a snapshot is
// taken"): from what one pass observed of the snapshot, its cluster and its Job, which phase and
// reason it is in, whether to create the Job, and when to look again. It is pure: values in,
// values out; internal/controller/etcdsnapshot observes and acts.
package backup
