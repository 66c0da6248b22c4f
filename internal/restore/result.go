package restore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// Reasons a restore can fail with, beyond those it shares with the snapshot agent
// (snapshot.ReasonInvalidConfig, ReasonAccessDenied, ReasonBucketNotFound,
// ReasonStoreUnreachable, ReasonStoreFailed, ReasonNoSpace, ReasonDeadlineExceeded,
// ReasonInterrupted, ReasonFailed): the two agents read and write the same stores, and a person
// fixes the same things. Reasons are CamelCase identifiers, as condition reasons are.
const (
	// ReasonArtifactNotFound: no object or file at the exact key or path. Permanent.
	ReasonArtifactNotFound snapshot.Reason = "ArtifactNotFound"
	// ReasonChecksumMismatch: the artifact's SHA-256 is not the one expected; nothing was
	// restored. Permanent.
	ReasonChecksumMismatch snapshot.Reason = "ChecksumMismatch"
	// ReasonChecksumFileInvalid: the .sha256 sidecar is not in sha256sum's format. Permanent.
	ReasonChecksumFileInvalid snapshot.Reason = "ChecksumFileInvalid"
	// ReasonVersionTooNew: the snapshot records a newer etcd minor than the target. Permanent.
	ReasonVersionTooNew snapshot.Reason = "VersionTooNew"
	// ReasonEtcdutlNotFound: the target image has no etcdutl. Permanent.
	ReasonEtcdutlNotFound snapshot.Reason = "EtcdutlNotFound"
	// ReasonEtcdutlFailed: `etcdutl snapshot restore` failed, for instance because the
	// snapshot's integrity hash does not match its content. Permanent.
	ReasonEtcdutlFailed snapshot.Reason = "EtcdutlFailed"
)

// Reasons lists every reason a restore can report, for documentation and exhaustive tests.
var Reasons = []snapshot.Reason{
	snapshot.ReasonInvalidConfig, ReasonArtifactNotFound, snapshot.ReasonAccessDenied, snapshot.ReasonBucketNotFound,
	snapshot.ReasonStoreUnreachable, snapshot.ReasonStoreFailed, snapshot.ReasonNoSpace, ReasonChecksumFileInvalid,
	ReasonChecksumMismatch, ReasonVersionTooNew, ReasonEtcdutlNotFound, ReasonEtcdutlFailed,
	snapshot.ReasonDeadlineExceeded, snapshot.ReasonInterrupted, snapshot.ReasonFailed,
}

// ExitCode is the agent's exit code for a failure with reason r: snapshot.ExitPermanent when
// running the same init container again cannot help, snapshot.ExitTransient otherwise. The
// kubelet restarts a failed init container either way (with back-off); the code tells a person
// reading the Pod which kind of failure it was.
func ExitCode(r snapshot.Reason) int {
	switch r {
	case ReasonArtifactNotFound, ReasonChecksumMismatch, ReasonChecksumFileInvalid, ReasonVersionTooNew,
		ReasonEtcdutlNotFound, ReasonEtcdutlFailed:
		return snapshot.ExitPermanent
	}
	return r.ExitCode()
}

// Outcomes of a successful run.
const (
	// OutcomeRestored: member/ was restored from the snapshot.
	OutcomeRestored = "Restored"
	// OutcomeAlreadyRestored: the data dir held member/ already (an earlier run of this Pod's
	// restore, or a Pod recreated before the cluster formed); nothing was done.
	OutcomeAlreadyRestored = "AlreadyRestored"
)

// Result is what the agent reports in its container's termination message.
type Result struct {
	// Outcome is set on success.
	Outcome string `json:"outcome,omitempty"`
	// URI names the artifact restored.
	URI string `json:"uri,omitempty"`
	// SizeBytes is the artifact's size.
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// Checksum is the artifact's SHA-256 as computed while downloading.
	Checksum string `json:"checksum,omitempty"`
	// Verification says what Checksum was checked against.
	Verification Verification `json:"verification,omitempty"`
	// SnapshotVersion is the etcd version the artifact records; empty when it records none.
	SnapshotVersion string `json:"snapshotVersion,omitempty"`
	// Reason is set when the restore failed.
	Reason snapshot.Reason `json:"reason,omitempty"`
	// Message explains a failure or a no-op to a person.
	Message string `json:"message,omitempty"`
}

// Failed reports whether the result describes a failure.
func (r Result) Failed() bool { return r.Reason != "" }

// FailureResult is the result of a failed restore.
func FailureResult(err error) Result {
	return Result{Reason: snapshot.ReasonOf(err), Message: err.Error()}
}

// maxMessageBytes bounds the message so that the whole JSON stays within the kubelet's
// snapshot.MaxTerminationMessageBytes: after control characters are replaced, escaping at most
// doubles a message (quotes and backslashes), and the other fields are bounded by the API's
// lengths (a 2048-byte endpoint is not part of the result).
const maxMessageBytes = 1200

// EncodeTerminationMessage renders r as JSON for the termination message, the message cut to
// maxMessageBytes (control characters, which would be escaped six bytes each, become spaces).
func EncodeTerminationMessage(r Result) []byte {
	r.Message = shorten(r.Message, maxMessageBytes)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		// Only unsupported types fail to marshal; Result has none.
		panic(fmt.Sprintf("encoding a restore result: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func shorten(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ErrBadResult means a termination message is not a restore result.
var ErrBadResult = errors.New("not a restore agent result")

// ParseTerminationMessage reads a result written by EncodeTerminationMessage. A message that is
// neither a failure with a reason nor an outcome is refused: the controller then quotes the raw
// text (the kubelet falls back to the log's tail when the agent wrote nothing, as when it
// crashed).
func ParseTerminationMessage(data []byte) (Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrBadResult, err)
	}
	if !r.Failed() && r.Outcome == "" {
		return Result{}, fmt.Errorf("%w: neither an outcome nor a failure reason", ErrBadResult)
	}
	return r, nil
}
