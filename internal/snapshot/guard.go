package snapshot

// Existing is what a destination holds under an artifact's name before the agent writes.
type Existing struct {
	// Present reports whether an artifact with the name exists.
	Present bool
	// UID is the EtcdSnapshot UID recorded with it (the .uid sibling on a PVC, the
	// etcd-snapshot-uid metadata in S3); empty when none was recorded.
	UID string
}

// CheckOverwrite is the overwrite guard: snapshot uid may write its artifact unless the
// destination already holds one that another snapshot wrote. An artifact recorded with uid is
// this snapshot's own, left by an earlier attempt of its Job, and is replaced; one with another
// UID, or with none (written by hand or by another tool), is never clobbered: the guard fails
// with ReasonArtifactExists. A Job retried after a crash thus ends with one artifact, and two
// snapshots given the same name and destination cannot destroy each other's.
func CheckOverwrite(existing Existing, uid string) error {
	switch {
	case !existing.Present, uid != "" && existing.UID == uid:
		return nil
	case existing.UID == "":
		return Failf(ReasonArtifactExists, "an artifact exists at the destination and records no snapshot UID; refusing to overwrite it")
	default:
		return Failf(ReasonArtifactExists, "an artifact exists at the destination, written by snapshot UID %s; refusing to overwrite it", truncate(existing.UID, 64))
	}
}
