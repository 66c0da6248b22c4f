// Package agentio is the I/O the snapshot agent (package snapshotagent) and the restore agent
// (package restoreagent) do alike, so that both behave and report alike: the process around a
// run (signals, the soft memory limit, the overall timeout, the termination message), the S3
// client (static credentials only, path-style addressing, a private CA, no checksum trailers
// that S3-compatible stores reject), the classification of S3 and file-system errors into the
// reasons of package snapshot, the files the environment names (credentials, CA bundles),
// writing large files without filling the page cache, and keeping secrets out of messages.
//
// How the agents run and report is described in docs/backup-restore.md, "The snapshot agent"
// and "Restore".
package agentio
