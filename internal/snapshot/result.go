package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Reason says why a snapshot failed, in the agent's result. Reasons are stable identifiers in
// CamelCase, as condition reasons are, so the controller can carry them into the EtcdSnapshot's
// Ready condition unchanged (ArtifactExists) or name them in its message (docs/backup-restore.md,
// "Reasons").
type Reason string

// The reasons a snapshot can fail with. Each is either permanent (the same Job retried would
// fail the same way until someone changes something) or transient; Permanent tells which.
const (
	// ReasonInvalidConfig: the Job's environment is incomplete or wrong, or a file it names (CA,
	// certificate, password) cannot be read. Permanent.
	ReasonInvalidConfig Reason = "InvalidConfig"
	// ReasonEtcdUnreachable: no etcd endpoint answered within the dial timeout. Transient.
	ReasonEtcdUnreachable Reason = "EtcdUnreachable"
	// ReasonEtcdAuthFailed: etcd refused the credentials or the user lacks permission for a
	// snapshot. Permanent.
	ReasonEtcdAuthFailed Reason = "EtcdAuthFailed"
	// ReasonSnapshotStreamFailed: etcd's snapshot stream broke off or arrived damaged (its
	// trailing integrity hash did not match). Nothing was stored. Transient.
	ReasonSnapshotStreamFailed Reason = "SnapshotStreamFailed"
	// ReasonArtifactExists: the destination holds an artifact that another snapshot (another
	// UID, or one that recorded none) wrote; the overwrite guard refused to replace it.
	// Permanent.
	ReasonArtifactExists Reason = "ArtifactExists"
	// ReasonNoSpace: the PVC has no room for the snapshot. No partial artifact is left.
	// Permanent.
	ReasonNoSpace Reason = "NoSpace"
	// ReasonAccessDenied: the store refused access (S3 403, or a PVC folder the agent may not
	// write). The agent fails closed: it never writes without having checked the guard.
	// Permanent.
	ReasonAccessDenied Reason = "AccessDenied"
	// ReasonBucketNotFound: the S3 bucket does not exist. Permanent.
	ReasonBucketNotFound Reason = "BucketNotFound"
	// ReasonStoreUnreachable: the S3 endpoint could not be reached (refused, DNS, TLS
	// handshake). Transient.
	ReasonStoreUnreachable Reason = "StoreUnreachable"
	// ReasonStoreFailed: the store failed otherwise (an S3 error response, an I/O error on the
	// PVC). Transient.
	ReasonStoreFailed Reason = "StoreFailed"
	// ReasonDeadlineExceeded: the agent's overall timeout passed. Transient.
	ReasonDeadlineExceeded Reason = "DeadlineExceeded"
	// ReasonInterrupted: the agent was asked to stop (SIGTERM) before it finished. Transient.
	ReasonInterrupted Reason = "Interrupted"
	// ReasonFailed: an error no other reason describes. Transient.
	ReasonFailed Reason = "Failed"
)

// Reasons lists every reason, for documentation and exhaustive tests.
var Reasons = []Reason{
	ReasonInvalidConfig, ReasonEtcdUnreachable, ReasonEtcdAuthFailed, ReasonSnapshotStreamFailed,
	ReasonArtifactExists, ReasonNoSpace, ReasonAccessDenied, ReasonBucketNotFound,
	ReasonStoreUnreachable, ReasonStoreFailed, ReasonDeadlineExceeded, ReasonInterrupted, ReasonFailed,
}

// Permanent reports whether retrying the same Job cannot help: the agent then exits with
// ExitPermanent, which a Job's podFailurePolicy can turn into an immediate failure instead of
// spending its backoffLimit.
func (r Reason) Permanent() bool {
	switch r {
	case ReasonInvalidConfig, ReasonEtcdAuthFailed, ReasonArtifactExists, ReasonNoSpace,
		ReasonAccessDenied, ReasonBucketNotFound:
		return true
	}
	return false
}

// Exit codes of the snapshot agent.
const (
	// ExitOK: the artifact and its sidecar are stored.
	ExitOK = 0
	// ExitTransient: the snapshot failed for a reason a retry may not meet again.
	ExitTransient = 1
	// ExitPermanent: the snapshot failed for a reason a retry will meet again (Reason.Permanent).
	ExitPermanent = 2
)

// ExitCode is the agent's exit code for a failure with reason r.
func (r Reason) ExitCode() int {
	if r.Permanent() {
		return ExitPermanent
	}
	return ExitTransient
}

// Failure is an error that carries the reason the snapshot failed with.
type Failure struct {
	// Reason classifies the failure.
	Reason Reason
	// Err says what went wrong; its text becomes the result's message.
	Err error
}

// Fail wraps err with reason.
func Fail(reason Reason, err error) error {
	return &Failure{Reason: reason, Err: err}
}

// Failf formats an error and wraps it with reason; %w works as in fmt.Errorf.
func Failf(reason Reason, format string, args ...any) error {
	return &Failure{Reason: reason, Err: fmt.Errorf(format, args...)}
}

func (f *Failure) Error() string { return f.Err.Error() }

// Unwrap returns the wrapped error.
func (f *Failure) Unwrap() error { return f.Err }

// ReasonOf returns the reason of the outermost Failure in err's chain, ReasonFailed when there
// is none, and "" for a nil error. Outermost wins so that a caller can reclassify an error it
// understands better than the code that returned it.
func ReasonOf(err error) Reason {
	if err == nil {
		return ""
	}
	if f, ok := errors.AsType[*Failure](err); ok {
		return f.Reason
	}
	return ReasonFailed
}

// Result is what the agent reports in its container's termination message: the artifact on
// success, the reason and a message on failure. The controller copies the artifact fields into
// the EtcdSnapshot's status.artifact.
type Result struct {
	// URI is where the artifact is: s3://bucket/key or pvc://claim/subPath/name.db.
	URI string `json:"uri,omitempty"`
	// SizeBytes is the artifact's size.
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// Checksum is the artifact's SHA-256, "sha256:<hex>".
	Checksum string `json:"checksum,omitempty"`
	// Revision is the etcd revision the snapshot holds (see docs/backup-restore.md, "Revision").
	Revision int64 `json:"revision,omitempty"`
	// EtcdVersion is the server version of the member that served the snapshot.
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// Pruned names the artifacts (file names, oldest first) that the schedule's retention
	// deleted after this one was stored; PrunedCount counts them all, since the list is
	// shortened to fit the termination message.
	Pruned      []string `json:"pruned,omitempty"`
	PrunedCount int      `json:"prunedCount,omitempty"`
	// PruneError says why pruning failed or stopped. The snapshot itself is stored: a failed
	// prune never fails it.
	PruneError string `json:"pruneError,omitempty"`
	// StreamMillis is how long the snapshot took to stream into the artifact, from opening
	// etcd's stream to the artifact and its checksum stored, in milliseconds: the interval
	// `etcdctl snapshot save` reports as "took" (docs/backup-restore.md, "Performance").
	StreamMillis int64 `json:"streamMillis,omitempty"`
	// PeakRSSBytes is the agent's peak resident set (VmHWM of /proc/self/status) when it wrote
	// the result, the pages of its own binary included; 0 where the kernel does not say.
	PeakRSSBytes int64 `json:"peakRSSBytes,omitempty"`
	// Reason is set when the snapshot failed.
	Reason Reason `json:"reason,omitempty"`
	// Message explains a failure to a person.
	Message string `json:"message,omitempty"`
}

// Failed reports whether the result describes a failure.
func (r Result) Failed() bool { return r.Reason != "" }

// FailureResult is the result of a failed snapshot.
func FailureResult(err error) Result {
	return Result{Reason: ReasonOf(err), Message: err.Error()}
}

// MaxTerminationMessageBytes is the size Kubernetes keeps of a container's termination message;
// the kubelet drops the rest.
const MaxTerminationMessageBytes = 4096

// truncationMark ends a message that was shortened to fit.
const truncationMark = "…"

// shortening is one way to make a result smaller: keep(r, n) keeps n units (names, bytes) of a
// field, from 0 up to most.
type shortening struct {
	most int
	keep func(r *Result, n int)
}

// EncodeTerminationMessage renders r as JSON of at most MaxTerminationMessageBytes, so that the
// controller always reads complete, valid JSON. When r does not fit it gives up, in order: names
// at the end of the pruned list (PrunedCount still counts them), the end of the prune error,
// the end of the failure message; never the artifact fields.
func EncodeTerminationMessage(r Result) []byte {
	pruned, pruneErr, msg := r.Pruned, truncate(r.PruneError, MaxTerminationMessageBytes), truncate(r.Message, MaxTerminationMessageBytes)
	shortenings := []shortening{
		{len(pruned), func(r *Result, n int) { r.Pruned = pruned[:n:n] }},
		{len(pruneErr), func(r *Result, n int) { r.PruneError = truncate(pruneErr, n) + truncationMark }},
		{len(msg), func(r *Result, n int) { r.Message = truncate(msg, n) + truncationMark }},
	}
	out := marshalResult(r)
	for _, s := range shortenings {
		if len(out) <= MaxTerminationMessageBytes {
			return out
		}
		if s.most == 0 { // the field is empty: nothing to give up
			continue
		}
		if best, ok := longestFitting(r, s); ok {
			return best
		}
		s.keep(&r, 0)
		out = marshalResult(r)
	}
	if len(out) <= MaxTerminationMessageBytes {
		return out
	}
	// Only artifact fields far beyond the API's maximum lengths get here, and a cut URI would
	// name the wrong object: report that instead of a result to misread.
	return []byte(`{"reason":"` + string(ReasonFailed) + `","message":"the snapshot result exceeds the termination message limit"}`)
}

// longestFitting finds the largest n for which r shortened by s.keep(n) fits, by bisection:
// escaping makes the encoded length of a cut string hard to predict (a control character takes
// six bytes). It returns false when not even n = 0 fits.
func longestFitting(r Result, s shortening) ([]byte, bool) {
	fits := func(n int) ([]byte, bool) {
		c := r
		s.keep(&c, n)
		out := marshalResult(c)
		return out, len(out) <= MaxTerminationMessageBytes
	}
	best, ok := fits(0)
	if !ok {
		return nil, false
	}
	lo, hi := 0, s.most // fits(lo) holds; find the largest such n
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if out, ok := fits(mid); ok {
			lo, best = mid, out
		} else {
			hi = mid - 1
		}
	}
	return best, true
}

func marshalResult(r Result) []byte {
	out, err := json.Marshal(r)
	if err != nil {
		// Only unsupported types fail to marshal; Result has none.
		panic(fmt.Sprintf("encoding a snapshot result: %v", err))
	}
	return out
}

// ErrBadResult means a termination message is not a snapshot result.
var ErrBadResult = errors.New("not a snapshot agent result")

// ParseTerminationMessage reads a result written by EncodeTerminationMessage. Unknown fields are
// ignored (a newer agent may report more); a result that is neither a complete success nor a
// failure with a reason is refused.
func ParseTerminationMessage(data []byte) (Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrBadResult, err)
	}
	if r.Failed() {
		return r, nil
	}
	if r.URI == "" {
		return Result{}, fmt.Errorf("%w: neither an artifact URI nor a failure reason", ErrBadResult)
	}
	if !validChecksum(r.Checksum) {
		return Result{}, fmt.Errorf("%w: checksum %q is not sha256:<64 lowercase hex digits>", ErrBadResult, truncate(r.Checksum, 100))
	}
	if r.SizeBytes < 0 || r.Revision < 0 {
		return Result{}, fmt.Errorf("%w: negative size or revision", ErrBadResult)
	}
	if r.PrunedCount < len(r.Pruned) {
		return Result{}, fmt.Errorf("%w: prunedCount %d is less than the %d names pruned lists", ErrBadResult, r.PrunedCount, len(r.Pruned))
	}
	return r, nil
}

func validChecksum(s string) bool {
	digest, ok := strings.CutPrefix(s, ChecksumPrefix)
	if !ok || len(digest) != 64 {
		return false
	}
	for _, c := range digest {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// truncate returns at most n bytes of s, cut at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
