package restore

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/internal/version"
)

// ErrNotExact means a restore source names a folder or a prefix rather than one file.
var ErrNotExact = errors.New("not an exact snapshot file")

// ExactKey checks an S3 restore source's key: one object, so non-empty and not a "folder" (a
// key ending in "/"). Unlike a snapshot destination's key, it is not a prefix: the snapshot the
// user names is restored, never one the agent picks.
func ExactKey(key string) (string, error) {
	switch {
	case key == "":
		return "", fmt.Errorf("%w: the key is empty; name the snapshot object, e.g. backups/etcd/nightly.db", ErrNotExact)
	case strings.HasSuffix(key, "/"):
		return "", fmt.Errorf("%w: key %q ends in \"/\" (a prefix); name the snapshot object", ErrNotExact, key)
	case len(key) > 1024:
		return "", fmt.Errorf("%w: the key is longer than S3's 1024 bytes", ErrNotExact)
	}
	return key, nil
}

// ExactPath checks and cleans a PVC restore source's path: a relative file path on the claim
// without "..", not the claim's root and not a folder.
func ExactPath(p string) (string, error) {
	if p == "" || strings.HasSuffix(p, "/") {
		return "", fmt.Errorf("%w: path %q must name the snapshot file on the claim, e.g. etcd/nightly.db", ErrNotExact, p)
	}
	cleaned, err := snapshot.CleanSubPath(p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotExact, err)
	}
	if cleaned == "" {
		return "", fmt.Errorf("%w: path %q names the claim's root", ErrNotExact, p)
	}
	return cleaned, nil
}

// ValidChecksum reports whether s is "sha256:" and 64 lowercase hex digits, the format of
// spec.bootstrap.restore.checksum and of status.artifact.checksum.
func ValidChecksum(s string) bool {
	digest, ok := strings.CutPrefix(s, snapshot.ChecksumPrefix)
	if !ok || len(digest) != 64 {
		return false
	}
	return strings.Trim(digest, "0123456789abcdef") == ""
}

// Verification says what an artifact's digest was checked against: the reported result names
// it, so that a restore nothing could check is visible as such.
type Verification string

const (
	// VerifiedBySpec means the digest matched spec.bootstrap.restore.checksum.
	VerifiedBySpec Verification = "checksum"
	// VerifiedBySidecar means the digest matched the <file>.sha256 sidecar next to the artifact.
	VerifiedBySidecar Verification = "sidecar"
	// Unverified means neither a checksum nor a sidecar was there; the restore went ahead, relying on
	// etcdutl's own integrity hash only.
	Unverified Verification = "unverified"
)

// Sidecar is what the agent found of an artifact's .sha256 sidecar.
type Sidecar struct {
	// Present reports whether the sidecar exists.
	Present bool
	// Content is its content.
	Content []byte
}

// ExpectedChecksum decides the digest an artifact must have, and what it comes from: the
// spec's checksum when set (the sidecar is then not needed, and not trusted over the person's
// own value), else the sidecar's, else none (Unverified). A sidecar that is not in sha256sum's
// format fails with ReasonChecksumFileInvalid: a damaged sidecar may mean a damaged artifact,
// and skipping the check would let it through.
func ExpectedChecksum(spec string, sidecar Sidecar) (string, Verification, error) {
	switch {
	case spec != "":
		return spec, VerifiedBySpec, nil
	case !sidecar.Present:
		return "", Unverified, nil
	}
	sum, _, err := snapshot.ParseChecksumFile(sidecar.Content)
	if err != nil {
		return "", "", snapshot.Failf(ReasonChecksumFileInvalid, "the snapshot's %s sidecar cannot be read: %w", snapshot.ChecksumSuffix, err)
	}
	return sum, VerifiedBySidecar, nil
}

// CheckChecksum compares the digest computed while downloading with the expected one (none
// expected passes). A mismatch is ReasonChecksumMismatch: the artifact is not the snapshot
// that was taken, or not the one the spec names, and nothing of it may reach member/.
func CheckChecksum(want string, how Verification, got string) error {
	if want == "" || want == got {
		return nil
	}
	source := "spec.bootstrap.restore.checksum"
	if how == VerifiedBySidecar {
		source = "the " + snapshot.ChecksumSuffix + " sidecar"
	}
	return snapshot.Failf(ReasonChecksumMismatch, "the snapshot's SHA-256 is %s, but %s says %s; nothing was restored", got, source, want)
}

// CheckVersion refuses a snapshot taken from a newer minor than the target: etcd's data format
// moves forward across minors (a 3.6 database may hold what 3.5 cannot read) and etcd supports
// no downgrade by restore. An older or equal minor is fine: etcd upgrades the data on start. An
// unknown snapshot version (an artifact from another tool, which records none) passes; a
// recorded one that does not parse is refused, since it cannot be shown to be safe.
func CheckVersion(snapshotVersion, target string) error {
	if snapshotVersion == "" {
		return nil
	}
	t, err := version.Parse(target)
	if err != nil {
		return snapshot.Failf(snapshot.ReasonInvalidConfig, "%s %q: %w", EnvEtcdVersion, target, err)
	}
	s, err := version.Parse(snapshotVersion)
	if err != nil {
		return snapshot.Failf(ReasonVersionTooNew, "the snapshot records etcd version %q, which is not MAJOR.MINOR.PATCH; cannot tell whether etcd %s can read it", snapshotVersion, t)
	}
	if s.Major > t.Major || (s.Major == t.Major && s.Minor > t.Minor) {
		return snapshot.Failf(ReasonVersionTooNew, "the snapshot was taken from etcd %s, newer than the target %s: etcd cannot restore a snapshot into an older minor; "+
			"restore into a cluster of version %s or newer", s, t, s.MinorString())
	}
	return nil
}

func parseVersion(s string) error {
	_, err := version.Parse(s)
	return err
}

// walSegmentBytes is the size etcd preallocates for a WAL segment; etcdutl writes the first one.
const walSegmentBytes = 64 << 20

// DataNeeded is the free space a restore needs on the data volume for an artifact of size
// bytes: the downloaded copy and etcdutl's copy of its database into member/snap/db, both on the
// volume until the download is removed, and the first WAL segment.
func DataNeeded(size int64) int64 { return 2*size + walSegmentBytes }

// StagingDir is where etcdutl writes the restored data dir, inside the data dir itself so that
// moving its member/ into place is a rename on one file system.
func StagingDir(dataDir string) string { return path.Join(dataDir, ".restore") }

// DownloadFile is where the artifact is downloaded, also on the data volume.
func DownloadFile(dataDir string) string { return path.Join(dataDir, ".restore.db") }
