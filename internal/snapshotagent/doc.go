// Package snapshotagent is the snapshot agent: the program a snapshot Job runs
// (`etcd-operator snapshot-agent`). It streams etcd's Maintenance.Snapshot from one member into
// an S3 object or a file on a mounted PVC, computing the artifact's size and SHA-256 as the
// bytes pass and checking etcd's own trailing hash, without staging the snapshot anywhere: its
// memory stays a few megabytes whatever the database's size. It then writes the sidecars,
// prunes the schedule's older artifacts when the snapshot belongs to a schedule with a
// retention, and reports the artifact, or the reason it failed, through its container's
// termination message.
//
// The contract it shares with the controller (environment, layout, reasons, result) is in
// package snapshot; docs/backup-restore.md, "The snapshot agent", describes it for users.
//
// Order of work, each step failing before the next costs anything:
//
//  1. parse the environment and read the files it names (TLS, credentials);
//  2. check the destination: folder or bucket, and the overwrite guard;
//  3. find a member that answers Status, a follower if one does;
//  4. check the destination has room for a database of the size Status reported;
//  5. stream the snapshot into the artifact, which appears only once complete;
//  6. write the .sha256 sidecar;
//  7. for a schedule's snapshot with a retention, delete the schedule's artifacts that no rule
//     keeps (prune.go); a failure there is reported, never fatal: the snapshot is stored;
//  8. write the result.
package snapshotagent
