package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Suffixes of an artifact and of the files written next to it.
const (
	// ArtifactSuffix ends the snapshot file's name: <snapshot-name>.db.
	ArtifactSuffix = ".db"
	// UIDSuffix ends the sibling that records which EtcdSnapshot (by UID) wrote the artifact on
	// a PVC; the overwrite guard reads it.
	UIDSuffix = ".uid"
	// VersionSuffix ends the sibling that records the etcd version that served the snapshot, so
	// that a restore can refuse a target older than the snapshot's minor.
	VersionSuffix = ".version"
	// ChecksumSuffix ends the sidecar in sha256sum format.
	ChecksumSuffix = ".sha256"
	// ScheduleSuffix ends the sibling that records, on a PVC, the UID of the
	// EtcdSnapshotSchedule whose snapshot wrote the artifact: the schedule's retention prunes
	// only artifacts that record its UID.
	ScheduleSuffix = ".schedule"
)

// SiblingSuffixes are the suffixes of every file the agent writes next to an artifact on a PVC,
// in the order a prune deletes them after the artifact: the owner marks last, so that a prune
// cut short never leaves an artifact that has lost its mark.
var SiblingSuffixes = []string{ChecksumSuffix, VersionSuffix, UIDSuffix, ScheduleSuffix}

// S3 object metadata keys set on the artifact (sent as x-amz-meta-<key>).
const (
	// MetadataUID holds the UID of the EtcdSnapshot that wrote the object: the overwrite guard
	// lets only that snapshot's retries replace it.
	MetadataUID = "etcd-snapshot-uid"
	// MetadataVersion holds the etcd version that served the snapshot.
	MetadataVersion = "etcd-snapshot-version"
	// MetadataScheduleUID holds the UID of the EtcdSnapshotSchedule whose snapshot wrote the
	// object; only objects that carry a schedule's UID are pruned by its retention.
	MetadataScheduleUID = "etcd-snapshot-schedule-uid"
)

// ChecksumPrefix starts a checksum as reported in the result and in status.artifact.checksum.
const ChecksumPrefix = "sha256:"

// ErrInvalidName means a snapshot name, subPath or key cannot name an artifact safely.
var ErrInvalidName = errors.New("invalid artifact name")

// ArtifactFileName is the artifact's base name: <snapshot-name>.db.
func ArtifactFileName(snapshotName string) string {
	return snapshotName + ArtifactSuffix
}

// snapshotNamePattern is a Kubernetes object name (a DNS-1123 subdomain), which EtcdSnapshot
// names are.
var snapshotNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// ValidateSnapshotName refuses a name that is not a Kubernetes object name. The agent takes the
// name from its environment and builds file names and patterns from it, so it checks rather
// than trust its caller: such a name is one path element and holds no glob metacharacter.
func ValidateSnapshotName(name string) error {
	if len(name) > 253 || !snapshotNamePattern.MatchString(name) {
		return fmt.Errorf("%w: snapshot name %q is not a Kubernetes object name", ErrInvalidName, truncate(name, 300))
	}
	return nil
}

// CleanSubPath returns a PVC destination's subPath as a relative, slash-separated folder
// without "." or ".." elements ("" for the claim's root). A subPath that would leave the claim
// ("../x", "/abs") is refused rather than cleaned, since it is a mistake, not a spelling.
func CleanSubPath(subPath string) (string, error) {
	if subPath == "" {
		return "", nil
	}
	if strings.HasPrefix(subPath, "/") || strings.ContainsRune(subPath, '\x00') {
		return "", fmt.Errorf("%w: subPath %q must be relative", ErrInvalidName, subPath)
	}
	for elem := range strings.SplitSeq(subPath, "/") {
		if elem == ".." {
			return "", fmt.Errorf("%w: subPath %q must not contain \"..\"", ErrInvalidName, subPath)
		}
	}
	cleaned := path.Clean(subPath)
	if cleaned == "." {
		return "", nil
	}
	return cleaned, nil
}

// ObjectKey is the S3 key of the artifact: <prefix>/<snapshot-name>.db, or just the file name
// when the prefix is empty. Slashes around the prefix are dropped, so "backups/" and "backups"
// name the same folder and no key starts with a slash.
func ObjectKey(prefix, snapshotName string) string {
	return ObjectFolder(prefix) + ArtifactFileName(snapshotName)
}

// ObjectFolder is the part of an artifact's key before its file name: "<prefix>/", or "" when
// the prefix is empty; ObjectKey(prefix, name) is ObjectFolder(prefix) + ArtifactFileName(name).
func ObjectFolder(prefix string) string {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return ""
	}
	return prefix + "/"
}

// S3URI is the artifact's URI in status: s3://<bucket>/<key>.
func S3URI(bucket, key string) string {
	return "s3://" + bucket + "/" + key
}

// PVCURI is the artifact's URI in status: pvc://<claim>/<subPath>/<snapshot-name>.db, without
// the subPath when it is empty. subPath must be cleaned (CleanSubPath).
func PVCURI(claim, subPath, snapshotName string) string {
	return "pvc://" + path.Join(claim, subPath, ArtifactFileName(snapshotName))
}

// FormatChecksum renders a SHA-256 digest as in the result: sha256:<64 lowercase hex digits>.
func FormatChecksum(sum [sha256.Size]byte) string {
	return ChecksumPrefix + hex.EncodeToString(sum[:])
}

// ChecksumFileContent is the sidecar's content in sha256sum's format, "<hex>  <file name>\n",
// so that `sha256sum -c <name>.db.sha256` verifies a downloaded artifact in its folder.
func ChecksumFileContent(sum [sha256.Size]byte, artifactFileName string) []byte {
	return []byte(hex.EncodeToString(sum[:]) + "  " + artifactFileName + "\n")
}

// ErrBadChecksumFile means a sidecar is not in sha256sum's format.
var ErrBadChecksumFile = errors.New("not a sha256sum line")

// ParseChecksumFile reads a sidecar written by ChecksumFileContent (or by sha256sum itself,
// whose binary-mode marker "*" it accepts) and returns the digest as "sha256:<hex>" and the file
// name it names.
func ParseChecksumFile(content []byte) (checksum, fileName string, err error) {
	line, _, _ := strings.Cut(string(content), "\n")
	digest, name, ok := strings.Cut(line, " ")
	name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*")
	if !ok || len(digest) != 2*sha256.Size || name == "" {
		return "", "", fmt.Errorf("%w: %q", ErrBadChecksumFile, truncate(line, 100))
	}
	if _, err := hex.DecodeString(digest); err != nil || strings.ToLower(digest) != digest {
		return "", "", fmt.Errorf("%w: digest %q is not lowercase hex", ErrBadChecksumFile, truncate(digest, 100))
	}
	return ChecksumPrefix + digest, name, nil
}
