// Package version decides which etcd version changes the operator accepts
// (docs/design/versions.md). It parses MAJOR.MINOR.PATCH release numbers, holds the versions this
// operator release supports (one pinned patch per minor, as hack/versions.env pins them) and the
// minimum patch etcd's upgrade guides require before each minor step, and checks a target version
// against the versions the members actually run.
//
// The check is against running versions, not against the previous spec: the CRD's transition rule
// (CEL rule 14, docs/api.md) already refuses a minor skip or downgrade relative to the old spec,
// but only the running members show a roll that is still in progress, a cluster paused on an older
// minor, or a member that never reached the minimum patch. Everything here is pure: values in,
// values out.
package version
