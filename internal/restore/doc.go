// Package restore is the contract between the Pod builder (internal/desired), the restore agent
// (the program a seed's `restore` init container runs, package restoreagent) and the EtcdCluster
// controller that reports a failed restore: the environment the init container passes to the
// agent (config.go), the rules the agent applies before it writes anything (which checksum an
// artifact must match, which snapshot versions a target may restore; check.go), and the result
// the agent reports through its container's termination message, with the reasons a restore can
// fail with (result.go). Everything here takes values and returns values; the I/O is in
// restoreagent.
//
// How a restore runs, and why, is described in docs/backup-restore.md, "Restore".
package restore
