// Package agentenv reads the environment the two agents are configured by: the snapshot agent
// (package snapshot holds its variables) and the restore agent (package restore). What they
// read alike is here, once: a parser that names every bad variable at once instead of stopping
// at the first, credentials given inline or as a mounted file, the S3 store settings and the
// termination message path. Everything here takes values and returns values.
//
// The variables are described for users in docs/backup-restore.md, "Environment" and
// "Restore".
package agentenv
