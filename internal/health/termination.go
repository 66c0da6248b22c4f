package health

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/guard"
)

// FatalClass is what a fatal etcd exit means for the member.
type FatalClass string

const (
	// ClassNone means the termination message matched no pattern.
	ClassNone FatalClass = ""
	// ClassDataCorrupt means the member's data files are damaged (bbolt or WAL): the member
	// cannot start from them and must be replaced.
	ClassDataCorrupt FatalClass = "DataCorrupt"
	// ClassDataLost means the member's data dir no longer holds the member's state (wiped,
	// replaced by an empty volume, or holding another cluster's data): it must be replaced.
	ClassDataLost FatalClass = "DataLost"
	// ClassRemovedFromCluster means the cluster no longer has this member: it must be replaced
	// under a new identity.
	ClassRemovedFromCluster FatalClass = "RemovedFromCluster"
	// ClassMisconfigured means etcd rejected its flags. Replacement does not help by itself;
	// such an exit is handled like any crash loop (and a template that never starts becomes
	// StartFailed).
	ClassMisconfigured FatalClass = "Misconfigured"
	// ClassCrashed is a recognised but unspecific fatal exit (a Go panic, a fatal log line):
	// handled like any crash loop.
	ClassCrashed FatalClass = "Crashed"
)

// Replaceable reports whether the class alone warrants replacing the member (after two
// consecutive identical terminations, docs/design/healing.md, "Classification").
func (c FatalClass) Replaceable() bool {
	switch c {
	case ClassDataCorrupt, ClassDataLost, ClassRemovedFromCluster:
		return true
	}
	return false
}

// terminationPattern recognises one fatal exit of etcd in a termination message.
type terminationPattern struct {
	// ID names the pattern in messages and tests; stable across releases.
	ID string
	// Class is what a match means.
	Class FatalClass
	// Description is the human explanation put into the Healthy condition's message.
	Description string
	// re matches anywhere in the termination message.
	re *regexp.Regexp
	// confirm, when set, must also accept the message; it sees the cluster's own ID.
	confirm func(message, clusterID string) bool
}

// Match is the result of classifying one termination message.
type Match struct {
	// Class is ClassNone when no pattern matched.
	Class FatalClass
	// Pattern is the ID of the matching pattern, empty when none matched.
	Pattern string
	// Description explains the match to a human.
	Description string
}

func pattern(id string, class FatalClass, description, re string) terminationPattern {
	return terminationPattern{ID: id, Class: class, Description: description, re: regexp.MustCompile(re)}
}

// Patterns shared by every supported minor. The order matters: the first match wins, so specific
// data-loss and corruption messages come before the generic panic and fatal lines that etcd
// prints after them. Every message is quoted from etcd's source and confirmed by a fixture
// captured from the pinned releases (testdata/<minor>/).
var (
	// bbolt refuses a file whose meta pages are invalid: "invalid database", "version
	// mismatch" or "checksum error" (https://github.com/etcd-io/bbolt/blob/main/errors/errors.go).
	// etcd panics with "failed to open database" (server/storage/backend/backend.go).
	//
	// Panics end with Go's goroutine trace, which can push the message itself out of the
	// kubelet's 2 KiB tail (seen in the fixtures: the "panic:" line 1.1–2.1 KiB from the end).
	// So patterns for panics also match the panicking frame, which stays in the tail:
	// backend.newBackend panics only when bbolt cannot open the file.
	patDBInvalid = pattern("bbolt-invalid", ClassDataCorrupt,
		"etcd cannot open its bbolt database (member/snap/db is corrupt)",
		`failed to open database|invalid database|bbolt: .*(checksum error|version mismatch)|file size too small|/backend\.newBackend\(`)
	// bbolt cannot map a database as large as --quota-backend-bytes asks (etcd maps the quota
	// up front): etcd panics "failed to open database" as for a corrupt file, with the error
	// "mmap too large". The data is fine and a new member with the same template would fail
	// the same way, so it is a configuration error (seen with a quota above about 232 TiB, which
	// the API accepts; e2e finding 11). It comes before patDBInvalid, which matches the same
	// panic.
	patDBMmapTooLarge = pattern("quota-too-large", ClassMisconfigured,
		"etcd cannot map a database as large as its --quota-backend-bytes (options.quotaBackendBytes is too large)",
		`mmap too large`)
	// The WAL's records are CRC-chained; a damaged record fails replay with "wal: crc
	// mismatch" or a decoding error (server/storage/wal/wal.go, ReadAll).
	patWALCorrupt = pattern("wal-corrupt", ClassDataCorrupt,
		"etcd cannot replay its write-ahead log (member/wal is corrupt)",
		`wal: crc mismatch|failed to read WAL|failed to open WAL|wal: max entry size limit exceeded|walpb: crc mismatch`)
	// The bbolt file is older than the newest raft snapshot it must match: etcd looks for the
	// snapshot's own db file, does not find it, and panics with "failed to recover v3 backend
	// from snapshot" (server/etcdserver/bootstrap.go, recoverSnapshot; server/storage/backend.go,
	// OpenSnapshotBackend), or reports "database file (...) does not match with snapshot".
	patDBSnapshotMismatch35 = pattern("db-snapshot-mismatch", ClassDataCorrupt,
		"etcd's bbolt database does not match its raft snapshot",
		`database file \(.*\) does not match with snapshot|failed to recover v3 backend from snapshot|failed to find database snapshot file`)
	// From 3.6 the panic comes from bootstrap.go's recoverSnapshot, whose frame is specific
	// (every panic there means the snapshot and the db disagree); in 3.5 it comes from
	// NewServer, which is not.
	patDBSnapshotMismatch36 = pattern("db-snapshot-mismatch", ClassDataCorrupt,
		"etcd's bbolt database does not match its raft snapshot",
		`database file \(.*\) does not match with snapshot|failed to recover v3 backend from snapshot|failed to find database snapshot file|etcdserver\.recoverSnapshot\(`)
	// The initial corruption check found a hash different from its peers'
	// (server/etcdserver/corrupt.go, InitialCheck; enabled by the operator,
	// docs/design/pod-template.md).
	patInitialCorruptCheck = pattern("initial-corrupt-check", ClassDataCorrupt,
		"etcd's initial corruption check found data inconsistent with its peers",
		`found data inconsistency with peers|failed initial corruption check`)
	// The operator's data-dir guard (internal/guard) refused to start etcd on a data dir that
	// lost the WAL the member had written. Not an etcd message, so it is the same for every
	// minor and comes first: etcd never ran.
	patGuardRefused = pattern("guard-data-lost", ClassDataLost,
		"the member's data dir no longer holds the data it wrote (the operator's guard refused to start etcd on it)",
		regexp.QuoteMeta(guard.RefusalPrefix)+`the data dir \S+ holds no write-ahead log`)
	// A wiped member restarted with --initial-cluster-state=new while its peers still list it
	// (server/etcdserver/bootstrap.go, isMemberBootstrapped).
	patAlreadyBootstrapped = pattern("already-bootstrapped", ClassDataLost,
		"the member's data dir is empty but the cluster already knows the member (its data was lost)",
		`member [0-9a-f]+ has already been bootstrapped`)
	// A wiped member restarted with state existing: its empty raft log is behind the leader's
	// commit index, and raft panics (go.etcd.io/raft/v3 log.go, commitTo).
	patRaftLogLost = pattern("raft-log-lost", ClassDataLost,
		"the member's raft log is behind what the cluster committed to it (its data was lost)",
		`tocommit\(\d+\) is out of range \[lastIndex\(\d+\)\]\. Was the raft log corrupted, truncated, or lost\?|\(\*raftLog\)\.commitTo\(`)
	// The member runs a cluster ID of its own: its data dir, or its bootstrap, belongs to
	// another cluster, and its peers answer 412. Such a member never exits by itself; the
	// liveness probe kills it, and its log tail (the termination message) is then full of
	// "request cluster ID mismatch" (rafthttp/http.go, as receiver) and "request sent was
	// ignored [by remote peer] due to cluster ID mismatch" (3.5/3.7 rafthttp/stream.go, 3.6
	// rafthttp/util.go, as sender). Healthy members print the same lines about the intruder, so
	// a line only counts when its local-member-cluster-id is not the cluster's own ID
	// (foreignClusterID); without a known cluster ID it never counts.
	patClusterIDMismatch = terminationPattern{ID: "cluster-id-mismatch", Class: ClassDataLost,
		Description: "the member runs another etcd cluster's ID (its data dir or its bootstrap belongs to another cluster)",
		re:          clusterIDMismatchRE, confirm: foreignClusterID}
	// The peers refused the member because it was removed from the cluster
	// (server/etcdserver/api/rafthttp, errMemberRemoved; server.go "data-dir used by this
	// member must be removed"). In the pinned releases these lines come more than 2 KiB before
	// the exit, outside the kubelet's tail (fixture restart-after-removal), so MemberList is the
	// signal that counts; the pattern stays for shorter logs.
	patRemoved = pattern("member-removed", ClassRemovedFromCluster,
		"the member was removed from the etcd cluster",
		`the member has been permanently removed from the cluster|data-dir used by this member must be removed`)
	// A member joining with state existing whose --initial-cluster no longer matches the
	// cluster's membership, typically because it was removed (server/etcdserver/api/membership,
	// ValidateClusterAndAssignIDs).
	patMembershipMismatch = pattern("membership-mismatch", ClassRemovedFromCluster,
		"the cluster's membership no longer includes this member as configured",
		`member count is unequal|error validating peerURLs|PeerURLs: no match found for existing member`)
	// --initial-advertise-peer-urls does not match this member's entry in --initial-cluster
	// (server/config/config.go, advertiseMatchesCluster).
	patPeerURLMismatch = pattern("peer-url-mismatch", ClassMisconfigured,
		"etcd rejected its peer URL flags (--initial-cluster does not match --initial-advertise-peer-urls)",
		`--initial-cluster has .* but missing from --initial-advertise-peer-urls|couldn't find local name .* in the initial cluster configuration`)
	// Any other Go panic or fatal log line.
	patPanic = pattern("panic", ClassCrashed,
		"etcd exited with a panic",
		`(?m)^panic: `)
	patFatal = pattern("fatal", ClassCrashed,
		"etcd exited with a fatal error",
		`"level":"fatal"`)
)

// clusterIDMismatchRE captures the local cluster ID of etcd's cluster-ID mismatch warnings
// (zap JSON; the field follows the message on the same line in every pinned release).
var clusterIDMismatchRE = regexp.MustCompile(
	`"msg":"(?:request cluster ID mismatch|request sent was ignored (?:by remote peer )?due to cluster ID mismatch)"[^\n]*?"local-member-cluster-id":"([0-9a-fA-F]+)"`)

// foreignClusterID reports whether some cluster-ID mismatch line was printed by a member whose
// own cluster ID is not clusterID (hex, as in EtcdCluster status.clusterID).
func foreignClusterID(message, clusterID string) bool {
	want, err := strconv.ParseUint(strings.TrimPrefix(clusterID, "0x"), 16, 64)
	if err != nil || want == 0 {
		return false
	}
	for _, m := range clusterIDMismatchRE.FindAllStringSubmatch(message, -1) {
		if got, err := strconv.ParseUint(m[1], 16, 64); err == nil && got != want {
			return true
		}
	}
	return false
}

// patternTables pins, per supported etcd minor, the patterns checked in order. The minors print
// the same messages for these failures (the fixtures prove it) except where noted; a minor whose
// wording changes gets its own patterns here and its own fixtures.
var patternTables = map[string][]terminationPattern{
	"3.5": patternsWith(patDBSnapshotMismatch35),
	"3.6": patternsWith(patDBSnapshotMismatch36),
	"3.7": patternsWith(patDBSnapshotMismatch36),
}

func patternsWith(dbSnapshotMismatch terminationPattern) []terminationPattern {
	return []terminationPattern{
		patGuardRefused, patDBMmapTooLarge, patDBInvalid, patWALCorrupt, dbSnapshotMismatch, patInitialCorruptCheck,
		patAlreadyBootstrapped, patRaftLogLost, patRemoved, patMembershipMismatch,
		patClusterIDMismatch, patPeerURLMismatch, patPanic, patFatal,
	}
}

// SupportedMinors returns the etcd minors that have a pattern table, sorted.
func SupportedMinors() []string {
	return slices.Sorted(maps.Keys(patternTables))
}

// Minor returns the "major.minor" of an etcd version such as "3.6.16" or "v3.6.16"; anything
// without two dot-separated parts is returned as is.
func Minor(version string) string {
	v := strings.TrimPrefix(version, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// ClassifyTermination matches a termination message against the pattern table of the given
// etcd minor ("3.6", or a full version). clusterID is the cluster's etcd ID in hex
// (EtcdCluster status.clusterID), empty when not latched yet; some patterns need it. A minor
// without a table classifies nothing: an unknown release's messages are not trusted to mean
// data loss.
func ClassifyTermination(minor, clusterID, message string) Match {
	if message == "" {
		return Match{}
	}
	for _, p := range patternTables[Minor(minor)] {
		if p.re.MatchString(message) && (p.confirm == nil || p.confirm(message, clusterID)) {
			return Match{Class: p.Class, Pattern: p.ID, Description: p.Description}
		}
	}
	return Match{}
}

// Kubelet limits on a termination message read from the container log with
// FallbackToLogsOnError: the last 80 lines, at most 2048 bytes
// (k8s.io/kubernetes/pkg/kubelet/container/runtime.go, MaxContainerTerminationMessageLogLines
// and MaxContainerTerminationMessageLogLength). The 4096-byte limit applies only to a message
// written to terminationMessagePath, which etcd never writes.
const (
	TerminationMessageLogLines = 80
	TerminationMessageLogBytes = 2048
)

// TerminationMessageTail cuts a container log the way the kubelet does when it falls back to
// the log for a termination message: the last TerminationMessageLogLines lines, then the last
// TerminationMessageLogBytes bytes of those. Tests use it to see what the operator will see.
func TerminationMessageTail(log []byte) string {
	s := string(log)
	trimmed := strings.TrimSuffix(s, "\n")
	if n := strings.Count(trimmed, "\n") + 1; n > TerminationMessageLogLines {
		idx := 0
		for range n - TerminationMessageLogLines {
			idx += strings.IndexByte(trimmed[idx:], '\n') + 1
		}
		s = s[idx:]
	}
	if len(s) > TerminationMessageLogBytes {
		s = s[len(s)-TerminationMessageLogBytes:]
	}
	return s
}
